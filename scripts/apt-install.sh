#!/usr/bin/env bash
# Installs the Debian packages named that are not installed yet: the one place this
# project calls apt-get. Safe to run from parallel tasks and beside the user's own apt:
# our own calls take turns on a lock of ours, `apt-get install` waits (DPkg::Lock::Timeout)
# for dpkg's lock, and `apt-get update`, which ignores that option and fails at
# once on /var/lib/apt/lists/lock, is tried again while another apt holds it (bounded).
#
#   scripts/apt-install.sh PACKAGE...            exits 0 when all are installed
#   APT_NO_SERVICE_START=1 scripts/apt-install.sh etcd-server   no service started
set -euo pipefail

log() { echo "apt-install: $*" >&2; }
lock_wait=${APT_LOCK_WAIT:-600} # seconds to wait for another apt, in each step

missing() {
  local p
  for p in "$@"; do
    dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed$' || echo "$p"
  done
}

mapfile -t todo < <(missing "$@")
[ ${#todo[@]} -eq 0 ] && exit 0
[ "$(id -u)" = 0 ] || { log "missing ${todo[*]}; installing them needs root"; exit 1; }
command -v apt-get >/dev/null || { log "missing ${todo[*]} and this machine has no apt-get"; exit 1; }

exec 9>/run/lock/flow-apt.lock # closed when this script exits
flock -w "$lock_wait" 9 || { log "another flow apt call held /run/lock/flow-apt.lock for ${lock_wait}s"; exit 1; }
mapfile -t todo < <(missing "${todo[@]}") # installed by the call we waited for?
[ ${#todo[@]} -eq 0 ] && exit 0

# apt_retry CMD...: runs an apt command again while it fails on another apt's lock.
apt_retry() {
  local out rc deadline=$((SECONDS + lock_wait))
  while :; do
    rc=0
    out=$("$@" 2>&1) || rc=$?
    [ $rc -eq 0 ] && return 0
    if grep -q 'Could not get lock\|Unable to acquire the dpkg frontend lock\|Unable to lock' <<<"$out" &&
      [ $SECONDS -lt $deadline ]; then
      log "waiting for another apt ($(grep -m1 'lock' <<<"$out"))"
      sleep 3
      continue
    fi
    printf '%s\n' "$out" >&2
    return $rc
  done
}

# Debian's policy-rc.d convention: invoke-rc.d starts no service while the file says 101.
# A policy-rc.d the machine already has is left alone (and then obeyed).
policy=/usr/sbin/policy-rc.d ours=
if [ -n "${APT_NO_SERVICE_START:-}" ] && [ ! -e "$policy" ]; then
  printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod 0755 "$policy" && ours=1
  trap 'rm -f "$policy"' EXIT
fi

log "installing ${todo[*]}"
apt_retry apt-get update -qq
apt_retry env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -o DPkg::Lock::Timeout="$lock_wait" \
  "${todo[@]}"
[ -z "$(missing "${todo[@]}")" ] || { log "still missing after apt-get: $(missing "${todo[@]}" | paste -sd' ')"; exit 1; }
