#!/usr/bin/env bash
# Host B: a second, independent LXD daemon on this machine, reached as a remote over
# HTTPS on the second loopback address, the way a real second machine is.
#
#   scripts/lab-host-b.sh start    start it (idempotent), bring the lab's images to it,
#                                  print what a flow needs to reach it
#   scripts/lab-host-b.sh status   print whether it runs (exit 0) or not (exit 3)
#   scripts/lab-host-b.sh token    print a new single-use trust token (for trust_token)
#   scripts/lab-host-b.sh stop     stop it by its own means (lxd shutdown), else by its pid
#
# Everything lives under $HOSTB_HOME (default /var/lib/flow-host-b):
#   lxd/       the daemon's LXD_DIR: its database, dir storage pool, instances, images
#   client/    an lxc client configuration (LXD_CONF) whose certificate host B trusts
#              through a trust token, as `lxc remote add` does for a real machine
#   lxd.pid    the daemon's pid, lxd.log its log
#
# It installs nothing beyond scripts/lab-setup.sh (the lxd package). It never creates a
# network or bridge, never touches the main daemon's configuration, and makes no
# connection outside this machine: the proxy variables point LXD's start-up fetch at a
# closed loopback port. HOSTB_IMAGES lists the main daemon's image aliases to copy
# (push mode; those missing on the main daemon are skipped; set and empty: none).
set -euo pipefail

HOME_B=${HOSTB_HOME:-/var/lib/flow-host-b}
ADDR=${HOSTB_ADDRESS:-127.0.0.2:8443}
REMOTE=flow-host-b
IMAGES=${HOSTB_IMAGES-flow-lab-busybox flow-member} # set and empty: none
export LXD_DIR_B=$HOME_B/lxd
CLIENT=$HOME_B/client
PIDFILE=$HOME_B/lxd.pid
LOG=$HOME_B/lxd.log
# shellcheck source=lxd-daemon.sh
source "$(dirname "${BASH_SOURCE[0]}")/lxd-daemon.sh"

fail() { echo "lab-host-b: $*" >&2; exit 1; }
# a command against host B's unix socket; LXD_SOCKET, which lxc and lxd prefer to
# LXD_DIR's socket, would point it (and a daemon started with it) at another one
onb() { env -u LXD_SOCKET LXD_DIR="$LXD_DIR_B" "$@"; }
client() { env -u LXD_DIR LXD_CONF="$CLIENT" "$@"; } # lxc as the client that trusts B over HTTPS

answers() { onb lxc info >/dev/null 2>&1; }

# ours reports whether pid is host B's daemon: an lxd whose LXD_DIR is ours.
ours() {
  local pid=$1
  [ -n "$pid" ] && [ -r "/proc/$pid/environ" ] || return 1
  [ "$(readlink "/proc/$pid/exe" 2>/dev/null)" = "$(readlink -f "$(command -v lxd)")" ] || return 1
  tr '\0' '\n' <"/proc/$pid/environ" | grep -x "LXD_DIR=$LXD_DIR_B" >/dev/null
}

start_daemon() {
  if answers; then return 0; fi
  if ours "$(cat "$PIDFILE" 2>/dev/null || true)"; then # started, not yet answering: never a second one
    onb lxd waitready --timeout 60 || fail "host B's lxd (pid $(cat "$PIDFILE")) runs but does not answer; see $LOG"
    return 0
  fi
  command -v lxd >/dev/null || fail "lxd is not installed (scripts/lab-setup.sh installs it)"
  [ "$(id -u)" = 0 ] || fail "starting host B's daemon needs root"
  mkdir -p "$LXD_DIR_B" "$CLIENT"
  chmod 0711 "$HOME_B" "$LXD_DIR_B"
  echo "lab-host-b: starting lxd with LXD_DIR=$LXD_DIR_B (log: $LOG)"
  start_lxd_daemon "$LXD_DIR_B" "$LOG" "$PIDFILE"
  onb lxd waitready --timeout 60 || fail "host B's lxd did not become ready; see $LOG"
}

# init_daemon gives a fresh daemon its HTTPS address, a dir pool and the default
# profile's root disk, by preseed: `lxd init --auto` may create a bridge.
init_daemon() {
  if [ "$(onb lxc config get core.https_address)" = "$ADDR" ] && onb lxc storage show default >/dev/null 2>&1 &&
    onb lxc profile device get default root pool >/dev/null 2>&1; then
    return 0
  fi
  onb lxd init --preseed <<YAML
config: {core.https_address: "$ADDR"}
storage_pools: [{name: default, driver: dir}]
profiles: [{name: default, devices: {root: {path: /, pool: default, type: disk}}}]
YAML
}

# trust_client makes host B trust the client configuration's certificate with a
# single-use trust token, as for a real machine (lxc remote add REMOTE TOKEN).
trust_client() {
  if client lxc info "$REMOTE:" 2>/dev/null | grep '^auth: trusted' >/dev/null; then return 0; fi
  client lxc remote remove "$REMOTE" >/dev/null 2>&1 || true
  local token
  token=$(onb lxc config trust add --name "flow-host-b-client" --quiet)
  client lxc remote add "$REMOTE" "$token" >/dev/null
}

# fingerprint runs an `lxc image info` command and prints the image's fingerprint, or
# nothing when there is no such image: under pipefail a bare pipeline would end the script.
fingerprint() { { "$@" 2>/dev/null || true; } | awk '/^Fingerprint:/ {print $2}'; }

copy_images() {
  local alias want
  for alias in $IMAGES; do
    want=$(fingerprint env -u LXD_DIR lxc image info "local:$alias")
    [ -n "$want" ] || continue # not on the main daemon (fresh-path.sh deletes the lab's images)
    [ "$(fingerprint onb lxc image info "$alias")" = "$want" ] && continue
    echo "lab-host-b: copying image $alias to host B"
    # Push: the main daemon serves no HTTPS address, so B cannot pull from it.
    client lxc image copy "local:$alias" "$REMOTE:" --mode push --copy-aliases >/dev/null
  done
}

print_remote() {
  cat <<EOF
lab-host-b: host B runs (LXD_DIR=$LXD_DIR_B)
  remote = {
    address     = "https://$ADDR"
    client_cert = "$CLIENT/client.crt"
    client_key  = "$CLIENT/client.key"
    server_cert = "$CLIENT/servercerts/$REMOTE.crt"
  }
  (or a fresh single-use trust token: scripts/lab-host-b.sh token)
EOF
}

stop_daemon() {
  if answers; then
    echo "lab-host-b: stopping host B's lxd"
    onb timeout 120 lxd shutdown || true
  fi
  local pid
  pid=$(cat "$PIDFILE" 2>/dev/null || true)
  if ours "$pid"; then # lxd shutdown did not end it
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 50); do ours "$pid" || break; sleep 0.2; done
    ours "$pid" && kill -9 "$pid" 2>/dev/null || true
  fi
  rm -f "$PIDFILE"
}

case "${1:-}" in
start)
  start_daemon
  init_daemon
  trust_client
  copy_images
  print_remote
  ;;
status)
  if answers; then
    echo "lab-host-b: running at https://$ADDR (LXD_DIR=$LXD_DIR_B, pid $(cat "$PIDFILE" 2>/dev/null || echo ?))"
  else
    echo "lab-host-b: not running"
    exit 3
  fi
  ;;
token)
  answers || fail "host B is not running (scripts/lab-host-b.sh start)"
  onb lxc config trust add --name "flow-$(date +%s%N)" --quiet
  ;;
stop) stop_daemon ;;
*)
  echo "usage: $0 start|status|token|stop" >&2
  exit 2
  ;;
esac
