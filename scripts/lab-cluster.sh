#!/usr/bin/env bash
# The lab cluster: three LXD daemons on this machine that form one real LXD cluster,
# each on its own loopback address, reached as one remote over HTTPS the way a cluster
# of real machines is.
#
#   scripts/lab-cluster.sh start    start the members (idempotent): the first bootstraps
#                                   the cluster, the others join it with tokens; then the
#                                   lxc client trusts it as remote lab-cluster, the lab's
#                                   images are copied in, and what a flow needs is printed
#   scripts/lab-cluster.sh status   each member's state (lxc cluster list); exit 3 when
#                                   no member runs
#   scripts/lab-cluster.sh token    print a new single-use trust token (for trust_token)
#   scripts/lab-cluster.sh stop     untrust the client and remove the remote, then stop
#                                   every member by its own means (lxd shutdown), else by
#                                   its pid; idempotent. The members' data stays: start
#                                   brings the same cluster back.
#
# Members (LAB_CLUSTER_MEMBERS, "NAME=ADDRESS ..."; default c1=127.0.0.3 c2=127.0.0.4
# c3=127.0.0.5, all on port 8443). Everything lives under $LAB_CLUSTER_HOME (default
# /var/lib/flow-lab-cluster):
#   NAME/lxd/     the member's LXD_DIR: its database, dir storage pool, instances
#   NAME/lxd.pid  the daemon's pid, NAME/lxd.log its log
#
# The remote goes into the lxc client configuration of whoever runs the script
# ($LXD_CONF, else ~/.config/lxc), so `lxc launch IMAGE lab-cluster:NAME --target c2`
# works from the shell; stop removes it and the cluster's trust of that client.
#
# Like scripts/lab-host-b.sh it installs nothing (scripts/lab-setup.sh installs lxd),
# never creates a network or bridge, never touches the main daemon (clustering cannot be
# undone: it is only ever enabled on the first member here), and makes no connection
# outside this machine: the proxy variables point LXD's start-up fetch at a closed
# loopback port. LAB_CLUSTER_IMAGES lists the main daemon's image aliases to copy in
# (push mode; those missing on the main daemon are skipped; set and empty: none).
#
# It is one kernel: a bind=host proxy device listens on this machine wherever its
# container runs, and cgroup names are shared with the main daemon's and host B's
# instances (give each its own names); see docs/k8s-lab.md, "On an LXD cluster".
set -euo pipefail

HOME_C=${LAB_CLUSTER_HOME:-/var/lib/flow-lab-cluster}
MEMBERS=${LAB_CLUSTER_MEMBERS:-c1=127.0.0.3 c2=127.0.0.4 c3=127.0.0.5}
PORT=8443
REMOTE=lab-cluster
IMAGES=${LAB_CLUSTER_IMAGES-flow-lab-busybox} # set and empty: none
CLIENT=${LXD_CONF:-$HOME/.config/lxc}
# shellcheck source=lxd-daemon.sh
source "$(dirname "${BASH_SOURCE[0]}")/lxd-daemon.sh"

fail() { echo "lab-cluster: $*" >&2; exit 1; }

names() { local m; for m in $MEMBERS; do echo "${m%%=*}"; done; }
# Under pipefail a reader that stops early (head, grep -q) fails the pipeline with the
# writer's SIGPIPE: the readers here read everything.
first() { local m; for m in $MEMBERS; do echo "${m%%=*}"; return; done; }
address() { # address NAME prints HOST:PORT
  local m
  for m in $MEMBERS; do [ "${m%%=*}" = "$1" ] && { echo "${m#*=}:$PORT"; return; }; done
  fail "no member $1"
}
dir() { echo "$HOME_C/$1/lxd"; }
# on runs a command against member n's unix socket. LXD_SOCKET, which lxc and lxd
# prefer to LXD_DIR's socket, would point it (and a daemon started with it) elsewhere.
on() { local n=$1; shift; env -u LXD_SOCKET LXD_DIR="$(dir "$n")" "$@"; }
client() { env -u LXD_DIR "$@"; }                   # lxc as the user's client, over HTTPS

answers() { on "$1" timeout 10 lxc query /1.0 >/dev/null 2>&1; }
clustered() { on "$1" timeout 10 lxc cluster list >/dev/null 2>&1; }
# anyone prints the name of a member that answers, or fails.
anyone() { local n; for n in $(names); do answers "$n" && { echo "$n"; return 0; }; done; return 1; }

# ours reports whether pid is member n's daemon: an lxd whose LXD_DIR is n's.
ours() {
  local n=$1 pid=$2
  [ -n "$pid" ] && [ -r "/proc/$pid/environ" ] || return 1
  [ "$(readlink "/proc/$pid/exe" 2>/dev/null)" = "$(readlink -f "$(command -v lxd)")" ] || return 1
  tr '\0' '\n' <"/proc/$pid/environ" | grep -x "LXD_DIR=$(dir "$n")" >/dev/null
}

# spawn starts member n's daemon in the background; wait_member waits until it answers.
# They are apart because a member that was in the cluster waits for the cluster's
# database, which needs a majority of the members: all are spawned before any is waited on.
spawn() {
  local n=$1 d
  d=$(dir "$n")
  if answers "$n" || ours "$n" "$(cat "$HOME_C/$n/lxd.pid" 2>/dev/null || true)"; then return 0; fi
  mkdir -p "$d"
  chmod 0711 "$HOME_C" "$HOME_C/$n" "$d"
  echo "lab-cluster: starting member $n with LXD_DIR=$d (log: $HOME_C/$n/lxd.log)"
  start_lxd_daemon "$d" "$HOME_C/$n/lxd.log" "$HOME_C/$n/lxd.pid"
}

wait_member() {
  on "$1" lxd waitready --timeout 90 || fail "member $1's lxd did not become ready; see $HOME_C/$1/lxd.log"
}

# bootstrap gives the first member its address, a dir pool and the default profile's
# root disk by preseed (`lxd init --auto` may create a bridge), then enables clustering.
bootstrap() {
  local n=$1
  clustered "$n" && return 0
  if [ "$(on "$n" lxc config get core.https_address)" != "$(address "$n")" ] ||
    ! on "$n" lxc storage show default >/dev/null 2>&1; then
    on "$n" lxd init --preseed <<YAML
config: {core.https_address: "$(address "$n")"}
storage_pools: [{name: default, driver: dir}]
profiles: [{name: default, devices: {root: {path: /, pool: default, type: disk}}}]
YAML
  fi
  echo "lab-cluster: enabling clustering on $n"
  on "$n" lxc cluster enable "$n" >/dev/null
}

# member_of reports whether n is a member of the cluster that member c1 sees.
member_of() { on "$2" lxc cluster list -f csv 2>/dev/null | cut -d, -f1 | grep -x "$1" >/dev/null; }

# join makes a fresh member n join the cluster of member c1 with a single-use join
# token, by preseed, as a real machine joins.
join() {
  local n=$1 c1=$2 token
  member_of "$n" "$c1" && return 0
  if on "$n" lxc storage show default >/dev/null 2>&1; then
    fail "member $n was initialised but is not in the cluster (a join cut short?): stop, remove $HOME_C/$n and start again"
  fi
  on "$c1" lxc cluster revoke-token "$n" >/dev/null 2>&1 || true # a token of a failed attempt
  token=$(on "$c1" lxc cluster add "$n" --quiet)
  echo "lab-cluster: $n joins the cluster"
  on "$n" lxd init --preseed <<YAML
cluster:
  enabled: true
  server_name: $n
  server_address: "$(address "$n")"
  cluster_token: "$token"
  member_config: [{entity: storage-pool, name: default, key: source, value: ""}]
YAML
}

# trust_client makes the cluster trust the user's lxc client with a single-use trust
# token (lxc remote add REMOTE TOKEN). After `lxc cluster enable` the first member
# serves a new certificate (the cluster's), so this must come after it: a remote
# pinned before fails with x509 errors. A client the cluster trusts already (its remote
# removed, or not answering yet when the cluster had just started) gets the remote
# alone: a token would be refused with "Client is already trusted".
trust_client() {
  local c1=$1 token fp
  if client lxc info "$REMOTE:" 2>/dev/null | grep '^auth: trusted' >/dev/null; then return 0; fi
  client lxc remote remove "$REMOTE" >/dev/null 2>&1 || true
  if fp=$(client_fingerprint) && on "$c1" lxc query "/1.0/certificates/$fp" >/dev/null 2>&1; then
    client lxc remote add "$REMOTE" "https://$(address "$c1")" --accept-certificate >/dev/null
    return
  fi
  token=$(on "$c1" lxc config trust add --name "flow-lab-cluster-client" --quiet)
  client lxc remote add "$REMOTE" "$token" >/dev/null
}

# client_fingerprint prints the SHA-256 fingerprint of the user's lxc client
# certificate, as LXD names trusted certificates; it fails when there is none yet.
client_fingerprint() {
  [ -f "$CLIENT/client.crt" ] || return 1
  openssl x509 -in "$CLIENT/client.crt" -noout -fingerprint -sha256 | cut -d= -f2 | tr -d : | tr 'A-F' 'a-f'
}

# untrust_client removes the client's certificate from the cluster's trust store and
# the remote from the client.
untrust_client() {
  local n fp
  if fp=$(client_fingerprint) && n=$(anyone); then
    on "$n" lxc config trust remove "$fp" >/dev/null 2>&1 || true
  fi
  [ "$(client lxc remote get-default 2>/dev/null)" = "$REMOTE" ] && client lxc remote switch local
  if client lxc remote remove "$REMOTE" 2>/dev/null; then
    echo "lab-cluster: remote $REMOTE removed"
  fi
}

# fingerprint runs an `lxc image info` command and prints the image's fingerprint, or
# nothing when there is no such image: under pipefail a bare pipeline would end the script.
fingerprint() { { "$@" 2>/dev/null || true; } | awk '/^Fingerprint:/ {print $2}'; }

copy_images() {
  local alias want
  for alias in $IMAGES; do
    want=$(fingerprint client lxc image info "local:$alias")
    [ -n "$want" ] || continue # not on the main daemon
    [ "$(fingerprint client lxc image info "$REMOTE:$alias")" = "$want" ] && continue
    echo "lab-cluster: copying image $alias into the cluster"
    # Push: the main daemon serves no HTTPS address, so the cluster cannot pull from it.
    client lxc image copy "local:$alias" "$REMOTE:" --mode push --copy-aliases >/dev/null
  done
}

print_remote() {
  cat <<EOF
lab-cluster: the cluster runs (members: $(names | tr '\n' ' ')at $MEMBERS, port $PORT)
  remote = {
    address     = "https://$(address "$(first)")"
    client_cert = "$CLIENT/client.crt"
    client_key  = "$CLIENT/client.key"
    server_cert = "$CLIENT/servercerts/$REMOTE.crt"
  }
  (or a fresh single-use trust token: scripts/lab-cluster.sh token)
  lxc cluster list $REMOTE:
EOF
}

stop_member() {
  local n=$1 pid
  if answers "$n"; then
    echo "lab-cluster: stopping member $n"
    on "$n" timeout 120 lxd shutdown || true
  fi
  pid=$(cat "$HOME_C/$n/lxd.pid" 2>/dev/null || true)
  if ours "$n" "$pid"; then # lxd shutdown did not end it
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 50); do ours "$n" "$pid" || break; sleep 0.2; done
    ours "$n" "$pid" && kill -9 "$pid" 2>/dev/null || true
  fi
  rm -f "$HOME_C/$n/lxd.pid"
}

start() {
  command -v lxd >/dev/null || fail "lxd is not installed (scripts/lab-setup.sh installs it)"
  [ "$(id -u)" = 0 ] || fail "starting the cluster's daemons needs root"
  local n c1
  c1=$(first)
  # A member that has joined before waits for the others (quorum): spawn all of them
  # first. A fresh joiner answers at once; the first member alone bootstraps.
  for n in $(names); do spawn "$n"; done
  for n in $(names); do wait_member "$n"; done
  bootstrap "$c1"
  for n in $(names); do [ "$n" = "$c1" ] || join "$n" "$c1"; done
  trust_client "$c1"
  copy_images
  print_remote
}

status() {
  local n running=0
  for n in $(names); do
    if answers "$n"; then
      running=1
      echo "lab-cluster: member $n runs at https://$(address "$n") (LXD_DIR=$(dir "$n"), pid $(cat "$HOME_C/$n/lxd.pid" 2>/dev/null || echo ?))"
    else
      echo "lab-cluster: member $n is not running"
    fi
  done
  [ "$running" = 1 ] || exit 3
  if client lxc info "$REMOTE:" >/dev/null 2>&1; then
    client lxc cluster list "$REMOTE:"
  else
    echo "lab-cluster: remote $REMOTE is not set up; as member $(anyone) sees the cluster:"
    on "$(anyone)" lxc cluster list
  fi
}

case "${1:-}" in
start) start ;;
status) status ;;
token)
  n=$(anyone) || fail "the cluster is not running (scripts/lab-cluster.sh start)"
  on "$n" lxc config trust add --name "flow-$(date +%s%N)" --quiet
  ;;
stop)
  untrust_client
  # All at once: a member stopped alone waits on the others, and the last ones lose
  # their majority while the first are stopping.
  for n in $(names); do stop_member "$n" & done
  wait
  ;;
*)
  echo "usage: $0 start|status|token|stop" >&2
  exit 2
  ;;
esac
