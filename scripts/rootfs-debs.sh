#!/usr/bin/env bash
# mmdebstrap's hook for the download cache that scripts/debian-rootfs.sh shares
# between roots: `in CHROOT` copies the cached packages into the root's apt archive
# before any download, `out CHROOT` adds the root's new packages to the cache, each
# by a rename, so a kill never leaves half a package there. Both hold $DEBS.lock.
set -euo pipefail
dir=${1:?usage: rootfs-debs.sh in|out CHROOT} root=${2:?usage: rootfs-debs.sh in|out CHROOT}
debs=${DEBS:?DEBS is the download cache}
archives=$root/var/cache/apt/archives
mkdir -p "$archives" "$debs"
exec 9>"$debs.lock"
flock 9
case $dir in
in) find "$debs" -maxdepth 1 -name '*.deb' -exec cp -t "$archives" {} + ;;
out)
  for f in "$archives"/*.deb; do
    [ -e "$f" ] || continue
    b=${f##*/}
    [ -e "$debs/$b" ] || { cp "$f" "$debs/.$b.tmp" && mv "$debs/.$b.tmp" "$debs/$b"; }
  done
  ;;
*) echo "rootfs-debs: in or out, not $dir" >&2; exit 2 ;;
esac
