#!/usr/bin/env bash
# The lab doctor's check of Karmada on the k8s lab (flows/lab-doctor.hcl): each member a
# Ready Cluster (kubectl get clusters), Karmada's components available in the host
# cluster, karmada-agent available in every pull member (its logs say why not). One line
# per problem, "karmada: ok" when there is none; exits 0 either way. Read-only.
#
#   karmada.sh CONFIG_DIR HOST_CLUSTER PULL_MEMBER,...
set -u
dir=$1 host=$2 pull=$3
found=0
say() { echo "$*"; found=$((found + 1)); }
kc() { kubectl --kubeconfig "$1" --request-timeout=10s "${@:2}"; }

api=$dir/karmada/karmada-apiserver.config
if ! out=$(kc "$api" get clusters -o jsonpath='{range .items[*]}{.metadata.name} {range .status.conditions[?(@.type=="Ready")]}{.status} {.reason}: {.message}{end}{"\n"}{end}' 2>&1); then
  say "karmada: Karmada's API server does not answer: ${out##*$'\n'} (kubectl --kubeconfig $dir/$host.config -n karmada-system get pods)"
else
  while read -r cluster status rest; do
    [ -z "$cluster" ] && continue
    [ "$status" = True ] || say "$cluster: Cluster not Ready in Karmada (${rest:-no condition yet}; kubectl --kubeconfig $api describe cluster $cluster)"
  done <<<"$out"
fi

kc "$dir/$host.config" -n karmada-system get deployments -o jsonpath='{range .items[*]}{.metadata.name} {.status.availableReplicas} {.spec.replicas}{"\n"}{end}' 2>/dev/null |
  while read -r d avail want; do
    [ "${avail:-0}" -ge "${want:-1}" ] || echo "$host: $d has ${avail:-0} of $want replicas available (kubectl --kubeconfig $dir/$host.config -n karmada-system describe deploy $d)"
  done | grep . && found=$((found + 1))

IFS=, read -ra members <<<"$pull"
for m in "${members[@]}"; do
  [ -n "$m" ] || continue
  read -r avail want < <(kc "$dir/$m.config" -n karmada-system get deploy karmada-agent -o jsonpath='{.status.availableReplicas} {.spec.replicas}' 2>/dev/null || echo "x x")
  if [ "$avail" = x ]; then
    say "$m: karmada-agent Deployment missing (flow resume of the lab registers $m again)"
  elif [ "${avail:-0}" -lt 1 ]; then
    say "$m: karmada-agent has ${avail:-0} of ${want:-0} replicas available (kubectl --kubeconfig $dir/$m.config -n karmada-system logs deploy/karmada-agent; scale it to 1)"
  fi
done
[ $found -eq 0 ] && echo "karmada: ok"
exit 0
