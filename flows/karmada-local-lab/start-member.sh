#!/bin/sh
# Runs inside a member container: starts etcd, kube-apiserver (127.0.0.1:16443) and
# kube-controller-manager (service-account tokens, namespaces) unless they run already,
# then waits until the API server's serving certificate exists. Credentials come from
# /var/lib/k8s/creds (pushed by the flow); binaries from /opt/k8s (mounted read-only).
set -eu
K=/opt/k8s D=/var/lib/k8s
ip link set lo up
grep -q '^127.0.0.1 localhost' /etc/hosts 2>/dev/null || echo '127.0.0.1 localhost' >>/etc/hosts
mkdir -p "$D/certs" /var/log /run

start() { # start NAME COMMAND...: a detached process with a pid file, once
  name=$1; shift
  if [ -f "/run/$name.pid" ] && kill -0 "$(cat "/run/$name.pid")" 2>/dev/null; then
    echo "$name already running (pid $(cat "/run/$name.pid"))"
    return
  fi
  setsid "$@" </dev/null >>"/var/log/$name.log" 2>&1 &
  echo $! >"/run/$name.pid"
  echo "$name started (pid $!)"
}

supervise() { # supervise NAME COMMAND...: as start, but COMMAND is started again whenever it exits
  name=$1; shift
  start "$name" sh -c 'while :; do "$@"; echo "$0 exited ($?); starting it again in 2s"; sleep 2; done' "$name" "$@"
}

start etcd "$K/lib64/ld-linux-x86-64.so.2" --library-path "$K/lib" "$K/bin/etcd" \
  --data-dir "$D/etcd" --listen-client-urls http://127.0.0.1:2379 \
  --advertise-client-urls http://127.0.0.1:2379 --listen-peer-urls http://127.0.0.1:2380 \
  --initial-advertise-peer-urls http://127.0.0.1:2380 --initial-cluster default=http://127.0.0.1:2380

start kube-apiserver "$K/bin/kube-apiserver" --advertise-address=127.0.0.1 --bind-address=127.0.0.1 \
  --secure-port=16443 --etcd-servers=http://127.0.0.1:2379 --cert-dir="$D/certs" \
  --token-auth-file="$D/creds/tokens.csv" --service-account-issuer=https://kubernetes.default.svc \
  --service-account-key-file="$D/creds/sa.pub" --service-account-signing-key-file="$D/creds/sa.key" \
  --authorization-mode=RBAC --service-cluster-ip-range=10.152.183.0/24

# kube-apiserver writes its self-signed certificate at start; the controller manager's
# kubeconfig trusts it.
i=0
while [ ! -s "$D/certs/apiserver.crt" ]; do
  i=$((i + 1)); [ $i -le 600 ] || { echo "no serving certificate after 60s; see /var/log/kube-apiserver.log" >&2; exit 1; }
  sleep 0.1
done
sh "$K/member-config.sh" "$(hostname)" >"$D/admin.kubeconfig"
# The controller manager exits when the API server is not healthy within 10 s of its own
# start, which a loaded machine can miss; then no service-account token is ever issued
# and karmadactl join fails. So it is started again.
supervise kube-controller-manager "$K/bin/kube-controller-manager" --kubeconfig="$D/admin.kubeconfig" \
  --leader-elect=false --bind-address=127.0.0.1 --secure-port=0 \
  --controllers=serviceaccount-token-controller,serviceaccount-controller,namespace-controller,deployment-controller,replicaset-controller \
  --service-account-private-key-file="$D/creds/sa.key" --root-ca-file="$D/certs/apiserver.crt"
