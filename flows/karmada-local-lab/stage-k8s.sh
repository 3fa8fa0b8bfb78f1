#!/bin/sh
# Stages what each member container runs into DIR (default .lab/k8s-root): Debian's etcd
# with the glibc pieces it links against, the static kube-apiserver and
# kube-controller-manager from BIN_CACHE (scripts/k8s-bins.sh), and the member scripts.
# The containers mount DIR read-only at /opt/k8s and run etcd as
#   /opt/k8s/lib64/ld-linux-x86-64.so.2 --library-path /opt/k8s/lib /opt/k8s/bin/etcd
# Prints DIR. Idempotent.
set -eu
bin_cache=$1 kube_version=$2 dir=${3:-.lab/k8s-root}
etcd=$(command -v etcd) || { echo "etcd missing (Debian package etcd-server; scripts/k8s-bins.sh installs it)" >&2; exit 1; }
mkdir -p "$dir/bin" "$dir/lib" "$dir/lib64"
cp -u "$etcd" "$dir/bin/etcd"
for lib in $(ldd "$etcd" | awk '/=>/ {print $3}'); do cp -uL "$lib" "$dir/lib/"; done
cp -uL /lib64/ld-linux-x86-64.so.2 "$dir/lib64/"
for b in kube-apiserver kube-controller-manager; do
  [ -x "$bin_cache/$b-$kube_version" ] || { echo "$bin_cache/$b-$kube_version missing: run scripts/k8s-bins.sh" >&2; exit 1; }
  cp -u "$bin_cache/$b-$kube_version" "$dir/bin/$b"
done
here=$(dirname "$0")
cp -u "$here/start-member.sh" "$here/member-config.sh" "$dir/"
chmod -R a+rX "$dir"
echo "$dir"
