#!/bin/sh
# up.sh: brings this member's single-node Kubernetes up, the pieces MicroK8s runs as snap
# services: containerd (CRI, cgroupfs), etcd, kube-apiserver on 16443, the controller
# manager, the scheduler, the kubelet and kube-proxy (iptables). Each starts once, with a
# pid file; a second call starts only what is not running, so it is safe to repeat after a
# kill, and init calls it at boot. Readiness is the flow's business (wait_ready), not ours.
# A component running with other arguments than this script now gives it (an up.sh the flow
# pushed since: every new `flow run flows/k8s-lab` pushes /opt/flow-member again and runs
# this, lxd_exec.member_up) is stopped and started with the new ones; one whose arguments
# are the same is left alone, so a running member picks up new flags at the next run.
# Each is started again whenever it exits, as systemd does for MicroK8s: on a loaded machine
# a component that gives up on a slow API server at its start (the controller manager does,
# after 10 s) would otherwise leave the cluster half up for good; and the kubelet waits for
# containerd.
set -eu
P=/var/lib/k8s/pki D=/var/lib/k8s R=/run/flow-member
NODE_IP=10.1.0.1 SERVICE_CIDR=10.152.183.0/24 POD_CIDR=10.1.0.0/16 DNS_IP=10.152.183.10
name=$(hostname)
here=$(dirname "$0")
mkdir -p "$R" "$D" /var/log/k8s /etc/cni/net.d /opt/cni /etc/containerd

start() { # start NAME COMMAND...: a detached process with a pid file, once
  n=$1; shift
  if [ -f "$R/$n.pid" ] && kill -0 "$(cat "$R/$n.pid")" 2>/dev/null; then
    if same "$(cat "$R/$n.pid")" "$@"; then
      echo "$n already running (pid $(cat "$R/$n.pid"))"
      return
    fi
    stop "$n"
  fi
  setsid "$@" </dev/null >>"/var/log/k8s/$n.log" 2>&1 &
  echo $! >"$R/$n.pid"
  echo "$n started (pid $!)"
}

same() { # same PID COMMAND...: PID's command line ends with COMMAND... (NUL-separated, as
  # /proc has it). A supervisor's (sh -c SCRIPT NAME COMMAND...) is compared from NAME on:
  # an edit of its script alone restarts nothing.
  p=$1; shift
  if [ "$1" = sh ] && [ "$2" = -c ]; then shift 3; fi
  printf '%s\0' "$@" >"$R/want.$$"
  tail -c "$(wc -c <"$R/want.$$")" "/proc/$p/cmdline" 2>/dev/null | cmp -s - "$R/want.$$"
  r=$?
  rm -f "$R/want.$$"
  return $r
}

stop() { # stop NAME: TERM to the pid in NAME's pid file, then up to 60 s for it and its
  # children to exit: a supervisor exits at once, but the API server it ends holds its port
  # for seconds more, and the new one would fail to bind until it is gone
  p=$(cat "$R/$1.pid")
  echo "$1 (pid $p) runs with other arguments: stopping it to start it with these"
  kids=$(pgrep -P "$p" || true)
  kill "$p" 2>/dev/null || true
  i=0
  while [ "$i" -lt 120 ]; do
    alive=
    for q in $p $kids; do kill -0 "$q" 2>/dev/null && alive=$q; done
    [ -n "$alive" ] || break
    i=$((i + 1)); sleep 0.5
  done
  rm -f "$R/$1.pid"
}

supervise() { # supervise NAME COMMAND...: as start, but COMMAND is started again whenever it
  # exits, as systemd restarts MicroK8s's services; a TERM to the pid in the pid file stops
  # COMMAND and its supervisor together
  n=$1; shift
  start "$n" sh -c 'trap "kill \$c 2>/dev/null; exit 143" TERM INT
while :; do "$@" & c=$!; wait $c; echo "$0 exited ($?); starting it again in 2s"; sleep 2; done' "$n" "$@"
}

put() { # put FILE: writes stdin to FILE only when it differs, since kube-proxy exits when its
  # configuration file changes under it
  cat >"$1.new"
  if cmp -s "$1.new" "$1"; then rm "$1.new"; else mv "$1.new" "$1"; fi
}

kubeconfig() { # kubeconfig USER: a component's kubeconfig, written once
  f=$D/$1.kubeconfig
  [ -s "$f" ] || { umask 077; sh "$here/config.sh" "$1" >"$f.tmp" && mv "$f.tmp" "$f"; }
  echo "$f"
}

# containerd: the default configuration with what MicroK8s sets (and a member in LXD needs):
# registries from certs.d, localhost:32000 over plain HTTP, the pause image from it, and
# oom_score_adj left alone (an unprivileged-looking /proc refuses lowering it). Debian's
# package ships a near-empty config.toml; ours replaces it.
containerd config default |
  sed -e 's|restrict_oom_score_adj = false|restrict_oom_score_adj = true|' \
      -e 's|sandbox_image = .*|sandbox_image = "localhost:32000/pause:3.6"|' \
      -e 's|config_path = ""|config_path = "/etc/containerd/certs.d"|' | put /etc/containerd/config.toml
mkdir -p /etc/containerd/certs.d/localhost:32000
put /etc/containerd/certs.d/localhost:32000/hosts.toml <<TOML
server = "http://localhost:32000"

[host."http://localhost:32000"]
  capabilities = ["pull", "resolve"]
TOML
# docker.io through the lab registry too (the lab has no internet): an image named as on
# Docker Hub, nginx:1.19.0, is pulled from localhost:32000/library/nginx:1.19.0 when the
# registry has it there (Karmada's e2e suite names its images so).
mkdir -p /etc/containerd/certs.d/docker.io
put /etc/containerd/certs.d/docker.io/hosts.toml <<TOML
server = "https://registry-1.docker.io"

[host."http://localhost:32000"]
  capabilities = ["pull", "resolve"]
TOML
[ -e /opt/cni/bin ] || ln -s /usr/lib/cni /opt/cni/bin
put /etc/cni/net.d/10-flow.conflist <<JSON
{
  "cniVersion": "0.4.0",
  "name": "flow-pods",
  "plugins": [
    {"type": "bridge", "bridge": "cni0", "isGateway": true, "ipMasq": false, "hairpinMode": true,
     "ipam": {"type": "host-local", "ranges": [[{"subnet": "$POD_CIDR", "gateway": "$NODE_IP"}]],
              "routes": [{"dst": "0.0.0.0/0"}]}},
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
JSON
[ -e /etc/resolv.conf ] || : >/etc/resolv.conf
supervise containerd containerd

supervise etcd etcd --name "$name" --data-dir "$D/etcd" \
  --listen-client-urls http://127.0.0.1:2379 --advertise-client-urls http://127.0.0.1:2379 \
  --listen-peer-urls http://127.0.0.1:2380 --initial-advertise-peer-urls http://127.0.0.1:2380 \
  --initial-cluster "$name=http://127.0.0.1:2380"

# The aggregation layer (the requestheader and proxy-client flags), as kubeadm sets it up:
# metrics.k8s.io (metrics-server, flows/k8s-lab/metrics.hcl) is served through it, and it
# costs nothing when no APIService is registered. The API server dials an aggregated API at
# its pods' IPs (aggregator routing), not through its Service: the node reaches pods on cni0
# directly, with no kube-proxy rule in the way. A member started without them gets them
# when the flow runs this again (see the top).
supervise kube-apiserver kube-apiserver --advertise-address=$NODE_IP --bind-address=0.0.0.0 \
  --secure-port=16443 --etcd-servers=http://127.0.0.1:2379 \
  --tls-cert-file=$P/apiserver.crt --tls-private-key-file=$P/apiserver.key --client-ca-file=$P/ca.crt \
  --token-auth-file=$P/tokens.csv --service-account-issuer=https://kubernetes.default.svc \
  --service-account-key-file=$P/sa.pub --service-account-signing-key-file=$P/sa.key \
  --kubelet-client-certificate=$P/apiserver-kubelet-client.crt --kubelet-client-key=$P/apiserver-kubelet-client.key \
  --authorization-mode=Node,RBAC --enable-admission-plugins=NodeRestriction --allow-privileged=true \
  --kubelet-preferred-address-types=InternalIP,Hostname \
  --service-cluster-ip-range=$SERVICE_CIDR --service-node-port-range=30000-32767 \
  --requestheader-client-ca-file=$P/front-proxy-ca.crt --requestheader-allowed-names=front-proxy-client \
  --requestheader-username-headers=X-Remote-User --requestheader-group-headers=X-Remote-Group \
  --requestheader-extra-headers-prefix=X-Remote-Extra- \
  --proxy-client-cert-file=$P/front-proxy-client.crt --proxy-client-key-file=$P/front-proxy-client.key \
  --enable-aggregator-routing=true

# The controller manager exits when the API server is not healthy within 10 s of its own
# start; started together on a loaded machine, it is not. So it is started again.
supervise kube-controller-manager kube-controller-manager --kubeconfig="$(kubeconfig kube-controller-manager)" \
  --leader-elect=false --bind-address=127.0.0.1 --use-service-account-credentials=true \
  --service-account-private-key-file=$P/sa.key --root-ca-file=$P/ca.crt \
  --cluster-signing-cert-file=$P/ca.crt --cluster-signing-key-file=$P/ca.key \
  --service-cluster-ip-range=$SERVICE_CIDR --cluster-cidr=$POD_CIDR

supervise kube-scheduler kube-scheduler --kubeconfig="$(kubeconfig kube-scheduler)" \
  --leader-elect=false --bind-address=127.0.0.1

put $D/kubelet.yaml <<YAML
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupDriver: cgroupfs
containerRuntimeEndpoint: unix:///run/containerd/containerd.sock
failSwapOn: false
localStorageCapacityIsolation: false
enforceNodeAllocatable: []
cgroupsPerQOS: true
address: $NODE_IP
readOnlyPort: 0
clusterDNS: [$DNS_IP]
clusterDomain: cluster.local
resolvConf: /etc/resolv.conf
serializeImagePulls: false
imageGCHighThresholdPercent: 100
evictionHard: {}
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $P/ca.crt}
authorization: {mode: Webhook}
YAML
# The kubelet's first call to the CRI fails at once when containerd does not answer yet, the
# kubelet then exits, and nothing starts it again: on a loaded machine containerd was not
# listening in time and the node never registered. So the kubelet waits for containerd.
n=0
until ctr --connect-timeout 1s version >/dev/null 2>&1; do
  n=$((n + 1))
  if [ "$n" -ge 60 ]; then
    echo "containerd does not answer on /run/containerd/containerd.sock after 60 tries (log: /var/log/k8s/containerd.log)" >&2
    exit 1
  fi
  sleep 0.5
done
supervise kubelet kubelet --config=$D/kubelet.yaml --kubeconfig="$(kubeconfig kubelet)" \
  --hostname-override="$name" --node-ip=$NODE_IP

put $D/kube-proxy.yaml <<YAML
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: iptables
clusterCIDR: $POD_CIDR
hostnameOverride: $name
bindAddress: 127.0.0.1
metricsBindAddress: 127.0.0.1:10249
healthzBindAddress: 127.0.0.1:10256
clientConnection: {kubeconfig: $(kubeconfig kube-proxy)}
conntrack: {maxPerCore: 0}
YAML
supervise kube-proxy kube-proxy --config=$D/kube-proxy.yaml
