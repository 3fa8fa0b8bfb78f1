#!/usr/bin/env bash
# The lab doctor's check of Karmada on the k8s lab (flows/lab-doctor.hcl): each member a
# Ready Cluster (kubectl get clusters), Karmada's components available in the host
# cluster, karmada-agent available in every pull member. "karmada: ok" when it finds
# nothing, else one line per problem, "NAME: PROBLEM (fix: COMMAND)" as in cluster.sh;
# exits 0 either way (exec.verdict fails the doctor). Read-only.
#
#   karmada.sh CONFIG_DIR HOST_CLUSTER PULL_MEMBER,...
set -u
dir=$1 host=$2 pull=$3
found=0
# say NAME PROBLEM FIX: one finding and the command that repairs it.
say() { echo "$1: $2 (fix: $3)"; found=$((found + 1)); }
kc() { kubectl --kubeconfig "$1" --request-timeout=10s "${@:2}"; }
# A new run of the lab makes again what is missing (make demo-resume would not: a lab
# whose run succeeded has nothing to resume).
lab="make demo"

api=$dir/karmada/karmada-apiserver.config
if ! out=$(kc "$api" get clusters -o jsonpath='{range .items[*]}{.metadata.name} {range .status.conditions[?(@.type=="Ready")]}{.status} {.reason}: {.message}{end}{"\n"}{end}' 2>&1); then
  say karmada "Karmada's API server does not answer: ${out##*$'\n'} (see: kubectl --kubeconfig $dir/$host.config -n karmada-system get pods)" "$lab"
else
  while read -r cluster status rest; do
    [ -z "$cluster" ] && continue
    [ "$status" = True ] || say "$cluster" "Cluster not Ready in Karmada (${rest:-no condition yet}; see: kubectl --kubeconfig $api describe cluster $cluster)" "$lab"
  done <<<"$out"
fi

deploys=$(kc "$dir/$host.config" -n karmada-system get deployments -o jsonpath='{range .items[*]}{.metadata.name} {.status.availableReplicas} {.spec.replicas}{"\n"}{end}' 2>/dev/null)
while read -r d avail want; do
  [ -n "$d" ] || continue
  [ "${avail:-0}" -ge "${want:-1}" ] ||
    say "$host" "$d has ${avail:-0} of $want replicas available (see: kubectl --kubeconfig $dir/$host.config -n karmada-system describe deploy $d)" \
      "kubectl --kubeconfig $dir/$host.config -n karmada-system rollout restart deploy/$d"
done <<<"$deploys"

IFS=, read -ra members <<<"$pull"
for m in "${members[@]}"; do
  [ -n "$m" ] || continue
  agent="kubectl --kubeconfig $dir/$m.config -n karmada-system"
  read -r avail want < <($agent --request-timeout=10s get deploy karmada-agent -o jsonpath='{.status.availableReplicas} {.spec.replicas}' 2>/dev/null || echo "x x")
  if [ "$avail" = x ]; then
    say "$m" "karmada-agent Deployment missing (a new run of the lab registers $m again)" "$lab"
  elif [ "${want:-0}" -lt 1 ]; then
    say "$m" "karmada-agent has ${avail:-0} of ${want:-0} replicas available: it is scaled to 0" "$agent scale deploy/karmada-agent --replicas=1"
  elif [ "${avail:-0}" -lt 1 ]; then
    say "$m" "karmada-agent has ${avail:-0} of $want replicas available (see: $agent logs deploy/karmada-agent)" "$agent rollout restart deploy/karmada-agent"
  fi
done
[ $found -eq 0 ] && echo "karmada: ok"
exit 0
