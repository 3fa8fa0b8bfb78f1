#!/usr/bin/env bash
# The lab doctor's check of one cluster of the k8s lab (flows/lab-doctor.hcl): the seed's
# troubleshooting guide, by a script. Prints "NAME: ok" when it finds nothing, else one
# line per problem, "NAME: PROBLEM (fix: COMMAND)", COMMAND being what repairs it from
# the repository's directory (and "see: COMMAND" what shows why, where that is not
# plain). It exits 0 either way: exec.verdict fails the doctor when any line is not ok,
# after every check has reported. Read-only: it changes nothing.
#
#   cluster.sh NAME HOST_PORT KUBECONFIG [HOST ADDRESS [REMOTE CERT KEY SERVER_CERT]]
#
# A cluster on another host (flows/k8s-lab/hosts.hcl) is reached through that host's LXD
# remote (its https address and the client certificate it trusts, as the lab's remote
# map has them), and its API port on ADDRESS; its fixes say on which host to run them.
set -u
name=$1 port=$2 kubeconfig=$3 host=${4:-a} address=${5:-127.0.0.1} remote=${6:-}
found=0
# say PROBLEM FIX: one finding and the command that repairs it.
say() { echo "$name: $1 (fix: $on$2)"; found=$((found + 1)); }
kc() { kubectl --kubeconfig "$kubeconfig" --request-timeout=10s "$@"; }

# lxc reaches a remote host through a client configuration of the doctor's own, as
# `lxc remote add` would write it, removed when the check ends.
on="" inst=$name where=()
if [ -n "$remote" ]; then
  conf=$(mktemp -d) && trap 'rm -rf "$conf"' EXIT
  mkdir -p "$conf/servercerts"
  cp "$7" "$conf/client.crt" && cp "$8" "$conf/client.key" && cp "$9" "$conf/servercerts/host.crt" || {
    echo "$name: cannot read host $host's client certificate, key or server certificate ($7, $8, $9)"
    exit 0
  }
  printf 'default-remote: local\nremotes:\n  host:\n    addr: %s\n    protocol: lxd\n    auth_type: tls\n    public: false\n' "$remote" >"$conf/config.yml"
  export LXD_CONF=$conf
  on="on host $host: " inst="host:$name" where=("host:")
fi

# What repairs what. A new run of the lab (make demo: flow run --new) makes every piece
# again that is missing; `make demo-resume` would not, since a lab whose run succeeded
# has nothing to resume. up.sh starts the member's processes that are not running; the
# proxy device is the one flows/k8s-lab/members.hcl makes (proxy_device.member_api).
lab="make demo"
up="lxc exec $name -- sh /opt/flow-member/up.sh"
add_api="lxc config device add $name api proxy listen=tcp:$address:$port connect=tcp:127.0.0.1:16443"
readd_api="lxc config device remove $name api && $add_api"

# lxc list: the container exists and runs.
state=$(lxc list "${where[@]}" "^$name\$" -f csv -c s 2>/dev/null)
if [ -z "$state" ]; then say "container missing (lxc list shows none)" "$lab"; exit 0; fi
if [ "$state" != RUNNING ]; then say "container $state" "lxc start $name && $up"; exit 0; fi

# The member's processes, each started with a pid file by flows/k8s-lab/member/up.sh.
stopped=()
for p in containerd etcd kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy; do
  lxc exec "$inst" -- sh -c "[ -f /run/flow-member/$p.pid ] && kill -0 \$(cat /run/flow-member/$p.pid)" 2>/dev/null ||
    stopped+=("$p")
done
for p in "${stopped[@]}"; do
  say "$p is not running in the container (see: ${on}lxc exec $name -- tail /var/log/k8s/$p.log)" "$up"
done

# ss -tlpn: the proxy device forwards the API server's host port, and nothing else holds it.
if ! lxc config device get "$inst" api listen >/dev/null 2>&1; then
  say "proxy device \"api\" missing: nothing of the lab forwards $address:$port" "$add_api"
elif [ -n "$remote" ]; then # another host's sockets are not this one's: ask the port itself
  timeout 5 bash -c "exec 3<>/dev/tcp/$address/$port" 2>/dev/null ||
    say "nothing accepts on $address:$port though the proxy device \"api\" is there" "$readd_api"
else
  holder=$(ss -Htlnp "sport = :$port" 2>/dev/null | grep -o 'users:(("[^"]*",pid=[0-9]*' | head -n1)
  if [ -z "$holder" ]; then
    say "nothing listens on 127.0.0.1:$port though the proxy device \"api\" is there (ss -tlpn)" "$readd_api"
  else
    cmd=${holder#users:((\"} cmd=${cmd%%\"*} pid=${holder##*pid=}
    args=" $(tr '\0' ' ' </proc/"$pid"/cmdline 2>/dev/null)"
    parent=$(awk '{print $4}' /proc/"$pid"/stat 2>/dev/null)
    init=$(lxc list "^$name\$" -f csv -c p 2>/dev/null)
    # LXD's forkproxy names the daemon's pid and the container's init pid in its arguments;
    # one whose daemon was killed has another parent now and forwards nowhere.
    case "$args" in
    *" forkproxy -- $parent "*" $init "*) ;; # this container's proxy, of the running daemon
    *" forkproxy "*) say "port $port is held by pid $pid, an LXD proxy that is not $name's or whose daemon is gone" "kill $pid && $readd_api" ;;
    *) say "port $port is held by pid $pid ($cmd), not by $name's proxy device" "stop $cmd (kill $pid), then $readd_api" ;;
    esac
  fi
fi

# kubectl get nodes / describe: the node is Ready, no pod is Pending. A problem found
# above is why the API server does not answer: its fix comes first.
if ! out=$(kc get node "$name" -o jsonpath='{range .status.conditions[?(@.type=="Ready")]}{.status} {.reason}: {.message}{end}' 2>&1); then
  [ $found -eq 0 ] && say "API server on $address:$port does not answer: ${out##*$'\n'} (see: ${on}lxc exec $name -- tail /var/log/k8s/kube-apiserver.log)" "$lab"
  exit 0
fi
case "$out" in
True*) ;;
*) say "node NotReady (${out#* }; see: kubectl --kubeconfig $kubeconfig describe node $name)" "$lab" ;;
esac
pending=$(kc get pods -A --field-selector=status.phase=Pending -o jsonpath='{range .items[*]}{.metadata.namespace}/{.metadata.name} {.status.conditions[?(@.type=="PodScheduled")].reason} {.status.containerStatuses[*].state.waiting.reason}{"\n"}{end}' 2>/dev/null)
while read -r pod reasons; do
  [ -n "$pod" ] || continue
  say "pod $pod Pending (${reasons:-no reason yet}; see: kubectl --kubeconfig $kubeconfig describe pod -n ${pod%%/*} ${pod#*/})" "$lab"
done <<<"$pending"
[ $found -eq 0 ] && echo "$name: ok"
exit 0
