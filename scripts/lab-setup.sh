#!/usr/bin/env bash
# Prepares this machine for the local lab and the tests that use it: installs (as
# root, via apt-get) LXD, busybox-static and docker-registry when missing, starts
# the LXD daemon when it is not running, gives it a dir storage pool on the default
# profile, and builds the small busybox image the local lab imports. Idempotent: a
# second call only checks.
#
# No network is ever created: containers get no NIC and are reached through proxy
# devices on 127.0.0.1. With CI=true anything missing is a failure, never a skip.
set -euo pipefail
cd "$(dirname "$0")/.."

fail() { echo "lab-setup: $*" >&2; exit 1; }

install_packages() {
  local missing=()
  command -v lxd >/dev/null || missing+=(lxd lxd-client)
  command -v docker-registry >/dev/null || missing+=(docker-registry)
  # The image needs the static build: a container has no libc for a dynamic one.
  { [ -x /bin/busybox ] && ! ldd /bin/busybox >/dev/null 2>&1; } || missing+=(busybox-static)
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "lab-setup: installing ${missing[*]}"
  bash scripts/apt-install.sh "${missing[@]}" || fail "could not install ${missing[*]}"
}

start_daemon() {
  if lxc info >/dev/null 2>&1; then return 0; fi
  [ "$(id -u)" = 0 ] || fail "the LXD daemon is not running and starting it needs root"
  echo "lab-setup: starting lxd (log: /var/log/lxd-daemon.log)"
  # No systemd on these machines: the daemon runs in its own session and outlives us.
  # It gets no descriptor of ours beyond 0-2: a caller's lock (flock /tmp/flow-lxd.lock
  # make fault-lxd, whose test restarts the daemon through this script) would otherwise
  # be held by the daemon for as long as it lives.
  (
    for fd in /proc/self/fd/*; do
      fd=${fd##*/}
      [ "$fd" -gt 2 ] && eval "exec $fd>&-"
    done
    exec setsid lxd --group root </dev/null >>/var/log/lxd-daemon.log 2>&1
  ) &
  lxd waitready --timeout 60 || fail "lxd did not become ready; see /var/log/lxd-daemon.log"
}

init_storage() {
  lxc storage show default >/dev/null 2>&1 || lxc storage create default dir >/dev/null
  lxc profile device get default root pool >/dev/null 2>&1 ||
    lxc profile device add default root disk path=/ pool=default >/dev/null
}

install_packages
start_daemon
init_storage
bash scripts/busybox-image.sh >/dev/null
echo "lab-setup: ok ($(lxc version 2>/dev/null | awk '/Server/ {print "server " $3}'), image $(cat .lab/busybox.fingerprint 2>/dev/null || echo ?))"
