#!/usr/bin/env bash
# Builds a Debian root file system as a tarball with mmdebstrap, from Debian's packages
# through this machine's own apt sources (no mirror is named here), once per package
# list: the tarball is cached under $FLOW_ROOTFS_CACHE (default ~/.cache/flow/rootfs)
# by a hash of the suite, the variant and the sorted package list, so the same request
# is a no-op and a changed list builds anew. Prints the tarball's path on its last line.
#
#   scripts/debian-rootfs.sh NAME [PACKAGE...]
#   ROOTFS_SUITE=bookworm ROOTFS_VARIANT=minbase scripts/debian-rootfs.sh member containerd runc
#
# Every build shares one download cache, $cache/debs (mmdebstrap's documented way: keep
# the archives, copy them in before and out after), so a package is downloaded once
# for all the roots, and the first root (the lab builds its base first) seeds it.
#
# Used by the member image (scripts/member-image.sh) and the lab's container images
# (flows/k8s-lab/images.hcl). Needs root (mmdebstrap's root mode) and the mmdebstrap
# package: the lab flow installs it first (exec.host_packages); run alone, this script
# installs it with scripts/apt-install.sh.
set -euo pipefail

name=${1:?usage: debian-rootfs.sh NAME [PACKAGE...]}
shift
suite=${ROOTFS_SUITE:-bookworm}
variant=${ROOTFS_VARIANT:-minbase}
cache=${FLOW_ROOTFS_CACHE:-$HOME/.cache/flow/rootfs}
log() { echo "debian-rootfs: $*" >&2; }

packages=$(printf '%s\n' "$@" | sort -u | paste -sd, -)
key=$(printf 'v1 %s %s %s\n' "$suite" "$variant" "$packages" | sha256sum | cut -c1-16)
out="$cache/$name-$key.tar"
if [ -f "$out" ]; then echo "$out"; exit 0; fi

command -v mmdebstrap >/dev/null || bash "$(dirname "$0")/apt-install.sh" mmdebstrap

# The host's own sources, passed as files: mmdebstrap reads a path as a sources list.
sources=()
for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
  [ -s "$f" ] && grep -qE '^[[:space:]]*(deb|Types:)' "$f" && sources+=("$f")
done
[ ${#sources[@]} -gt 0 ] || { log "this machine has no apt sources to build from"; exit 1; }

export DEBS=$cache/debs
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$DEBS"
last=$(awk -v n="$name" '$2 == "rootfs" && $3 == n {t = $4} END {print t}' "$cache/build-times.log" 2>/dev/null || true)
start=$SECONDS
log "building $name ($suite, $variant${packages:+, $packages}; ${last:+$last last time on this machine}${last:-about 1-5 min, less once the download cache holds its packages}), once per package list"
include=()
[ -n "$packages" ] && include=(--include="$packages")
# dpkg's documentation and locales are dead weight in a container; apt lists are
# stale the moment the tarball is cached.
# The download cache goes in and out by scripts/rootfs-debs.sh.
mmdebstrap --quiet --format=tar --variant="$variant" "${include[@]}" \
  --dpkgopt='path-exclude=/usr/share/{doc,man,info,locale}/*' \
  --dpkgopt='path-include=/usr/share/locale/locale.alias' \
  --skip=download/empty --skip=essential/unlink \
  --setup-hook="bash '$here/rootfs-debs.sh' in \"\$1\"" \
  --customize-hook="bash '$here/rootfs-debs.sh' out \"\$1\"" \
  --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*.bin "$1"/var/cache/apt/archives/*.deb' \
  "$suite" "$out.tmp.$$" "${sources[@]}" >&2
mv "$out.tmp.$$" "$out"
echo "$(date -u +%FT%TZ) rootfs $name $((SECONDS - start))s" >>"$cache/build-times.log"
log "built $out in $((SECONDS - start))s"
echo "$out"
