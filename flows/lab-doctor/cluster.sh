#!/usr/bin/env bash
# The lab doctor's check of one cluster of the k8s lab (flows/lab-doctor.hcl): the seed's
# troubleshooting guide, by a script. Prints one line per problem found, "NAME: ok" when
# there is none, and a hint of what to do in each; exits 0 either way (the doctor reports,
# it does not fail). Read-only: it changes nothing.
#
#   cluster.sh NAME HOST_PORT KUBECONFIG
set -u
name=$1 port=$2 kubeconfig=$3
found=0
say() { echo "$name: $*"; found=$((found + 1)); }
kc() { kubectl --kubeconfig "$kubeconfig" --request-timeout=10s "$@"; }

# lxc list: the container exists and runs.
state=$(lxc list "^$name\$" -f csv -c s 2>/dev/null)
if [ -z "$state" ]; then say "container missing (lxc list shows none; flow resume of the lab makes it)"; exit 0; fi
if [ "$state" != RUNNING ]; then say "container $state (lxc start $name, then flow resume)"; exit 0; fi

# The member's processes, each started with a pid file by flows/k8s-lab/member/up.sh.
for p in containerd etcd kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy; do
  lxc exec "$name" -- sh -c "[ -f /run/flow-member/$p.pid ] && kill -0 \$(cat /run/flow-member/$p.pid)" 2>/dev/null ||
    say "$p is not running in the container (log: lxc exec $name -- tail /var/log/k8s/$p.log; flow resume starts it again)"
done

# ss -tlpn: the proxy device forwards the API server's host port, and nothing else holds it.
if ! lxc config device get "$name" api listen >/dev/null 2>&1; then
  say "proxy device \"api\" missing: nothing of the lab forwards 127.0.0.1:$port (flow resume of the lab adds it)"
fi
holder=$(ss -Htlnp "sport = :$port" 2>/dev/null | grep -o 'users:(("[^"]*",pid=[0-9]*' | head -n1)
if [ -z "$holder" ]; then
  say "nothing listens on 127.0.0.1:$port (ss -tlpn)"
else
  cmd=${holder#users:((\"} cmd=${cmd%%\"*} pid=${holder##*pid=}
  args=" $(tr '\0' ' ' </proc/"$pid"/cmdline 2>/dev/null)"
  parent=$(awk '{print $4}' /proc/"$pid"/stat 2>/dev/null)
  init=$(lxc list "^$name\$" -f csv -c p 2>/dev/null)
  # LXD's forkproxy names the daemon's pid and the container's init pid in its arguments;
  # one whose daemon was killed has another parent now and forwards nowhere.
  case "$args" in
  *" forkproxy -- $parent "*" $init "*) ;; # this container's proxy, of the running daemon
  *" forkproxy "*) say "port $port is held by pid $pid, an LXD proxy that is not $name's or whose daemon is gone (kill $pid, then flow resume)" ;;
  *) say "port $port is held by pid $pid ($cmd), not by $name's proxy device (stop it, then flow resume)" ;;
  esac
fi

# kubectl get nodes / describe: the node is Ready, no pod is Pending.
if ! out=$(kc get node "$name" -o jsonpath='{range .status.conditions[?(@.type=="Ready")]}{.status} {.reason}: {.message}{end}' 2>&1); then
  say "API server on 127.0.0.1:$port does not answer: ${out##*$'\n'}"
  exit 0
fi
case "$out" in
True*) ;;
*) say "node NotReady (${out#* }; kubectl describe node $name)" ;;
esac
kc get pods -A --field-selector=status.phase=Pending -o jsonpath='{range .items[*]}{.metadata.namespace}/{.metadata.name} {.status.conditions[?(@.type=="PodScheduled")].reason} {.status.containerStatuses[*].state.waiting.reason}{"\n"}{end}' 2>/dev/null |
  while read -r pod reasons; do
    [ -n "$pod" ] && echo "$name: pod $pod Pending (${reasons:-no reason yet}; kubectl describe pod -n ${pod%%/*} ${pod#*/})"
  done | grep . && found=$((found + 1))
[ $found -eq 0 ] && echo "$name: ok"
exit 0
