#!/usr/bin/env bash
# Builds .lab/member-image.tar: the LXD image every member of the Kubernetes lab (and the
# host cluster) runs, MicroK8s's parts without snap: a Debian root file system with
# containerd, runc, the CNI plugins, iptables, conntrack, etcd and tini from Debian's
# packages (ROOTFS, built by scripts/debian-rootfs.sh: exec.member_rootfs in the lab), the
# Kubernetes binaries built from the Go module proxy (BIN_CACHE, by scripts/k8s-bins.sh),
# and the member's init (flows/k8s-lab/member/init.sh). Cached: it is rebuilt only when
# the root, a binary or the init changes (a stamp holds their hashes). Prints the
# tarball's path.
#
#   scripts/member-image.sh ROOTFS BIN_CACHE K8S_VERSION
set -euo pipefail
cd "$(dirname "$0")/.."
usage="usage: member-image.sh ROOTFS BIN_CACHE K8S_VERSION"
rootfs=${1:?$usage} bins=${2:?$usage} version=${3:?$usage}
commands=(kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy)
init=flows/k8s-lab/member/init.sh
out=.lab/member-image.tar

[ -f "$rootfs" ] || { echo "member-image: root file system $rootfs missing" >&2; exit 1; }
for c in "${commands[@]}"; do
  [ -x "$bins/$c-$version" ] || { echo "member-image: $bins/$c-$version missing: run scripts/k8s-bins.sh" >&2; exit 1; }
done
inputs=("$rootfs" "$init")
for c in "${commands[@]}"; do inputs+=("$bins/$c-$version"); done
# Two stamps: what the kernel says of the inputs and the image (a stat each), then, only
# when that changed, their digests (reading the 400 MB of binaries), so a touched but
# equal input does not rebuild the image and an unchanged one costs no read.
quick() { { echo "v1 $version"; stat -c '%n %d %i %s %Y %Z' "${inputs[@]}" "$out" 2>/dev/null; } | sha256sum | cut -c1-16; }
stamp=.lab/member-image.source quick_stamp=.lab/member-image.stat
if [ -f "$out" ] && [ "$(cat "$quick_stamp" 2>/dev/null)" = "$(quick)" ]; then echo "$out"; exit 0; fi
want=$( { echo "v1 $rootfs $version"; sha256sum "$init"; for c in "${commands[@]}"; do sha256sum "$bins/$c-$version"; done; } | sha256sum | cut -c1-16)
if [ -f "$out" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then quick >"$quick_stamp"; echo "$out"; exit 0; fi

start=$SECONDS
mkdir -p .lab
work=$(mktemp -d .lab/member-image.XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir "$work/rootfs"
tar -C "$work/rootfs" --numeric-owner -xf "$rootfs"
for c in "${commands[@]}"; do install -m 0755 "$bins/$c-$version" "$work/rootfs/usr/local/bin/$c"; done
install -m 0755 "$init" "$work/rootfs/sbin/init"
printf '127.0.0.1 localhost\n' >"$work/rootfs/etc/hosts"
cat >"$work/metadata.yaml" <<META
architecture: x86_64
creation_date: 1700000000
properties:
  description: flow member (Debian bookworm, containerd, Kubernetes $version)
  os: debian
  release: bookworm
META
# Uncompressed: LXD reads a plain tarball, and gzip of ~800 MB costs more than it saves here.
tar --sort=name --mtime=@1700000000 --numeric-owner -C "$work" -cf "$out.tmp.$$" metadata.yaml rootfs
mv "$out.tmp.$$" "$out"
echo "$want" >"$stamp"
quick >"$quick_stamp"
echo "member-image: built $out in $((SECONDS - start))s" >&2
echo "$out"
