#!/usr/bin/env bash
# Builds .lab/busybox.tar.gz: a unified LXD image (metadata.yaml + rootfs) holding
# only /bin/busybox from Debian's busybox-static and its applet links. There is no
# image server on these machines, so the local lab imports this file instead.
# The build is reproducible: fixed timestamps and owners give the same bytes, so
# the image fingerprint only changes when busybox does.
set -euo pipefail
cd "$(dirname "$0")/.."
out=.lab/busybox.tar.gz
busybox=/bin/busybox
[ -x "$busybox" ] || { echo "busybox-image: $busybox missing (Debian package busybox-static)" >&2; exit 1; }
if ldd "$busybox" >/dev/null 2>&1; then
  echo "busybox-image: $busybox is dynamically linked; install Debian's busybox-static" >&2; exit 1
fi
stamp=".lab/busybox.source"
want="$(sha256sum "$busybox" | cut -d' ' -f1) v1"
if [ -f "$out" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then echo "$out"; exit 0; fi

mkdir -p .lab
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
root=$work/rootfs
mkdir -p "$root"/{bin,sbin,etc,tmp,root,proc,sys,dev,run,var/log,srv,usr/bin}
cp "$busybox" "$root/bin/busybox"
for applet in $("$busybox" --list); do
  [ "$applet" = busybox ] || ln -sf busybox "$root/bin/$applet"
done
ln -sf ../bin/busybox "$root/sbin/init"
printf '127.0.0.1 localhost\n::1 localhost\n' >"$root/etc/hosts"
printf 'root:x:0:0:root:/root:/bin/sh\n' >"$root/etc/passwd"
printf 'root:x:0:\n' >"$root/etc/group"
# init runs /etc/init.d/rcS at boot: bring loopback up, since containers get no NIC.
mkdir -p "$root/etc/init.d"
printf '#!/bin/sh\nip link set lo up\n' >"$root/etc/init.d/rcS"
chmod 0755 "$root/etc/init.d/rcS" "$root/tmp"
chmod 1777 "$root/tmp"
cat >"$work/metadata.yaml" <<META
architecture: x86_64
creation_date: 1700000000
properties:
  description: busybox (flow local lab)
  os: busybox
  release: "$("$busybox" 2>&1 | head -1 | awk '{print $2}')"
META
tar --sort=name --mtime=@1700000000 --owner=0 --group=0 --numeric-owner \
  -C "$work" -cf - metadata.yaml rootfs | gzip -n >"$out.tmp.$$"
mv "$out.tmp.$$" "$out"
sha256sum "$out" | cut -d' ' -f1 >.lab/busybox.fingerprint
echo "$want" >"$stamp"
echo "$out"
