#!/bin/sh
# Stages Debian's docker-registry with the glibc pieces it links against into
# DIR (default .lab/registry-root), so a busybox container can run it as
#   DIR/lib64/ld-linux-x86-64.so.2 --library-path DIR/lib DIR/bin/docker-registry
# Prints DIR. Idempotent.
set -eu
dir=${1:-.lab/registry-root}
bin=$(command -v docker-registry) || { echo "docker-registry missing (Debian package docker-registry; scripts/lab-setup.sh installs it)" >&2; exit 1; }
mkdir -p "$dir/bin" "$dir/lib" "$dir/lib64"
cp -u "$bin" "$dir/bin/docker-registry"
for lib in $(ldd "$bin" | awk '/=>/ {print $3}'); do cp -uL "$lib" "$dir/lib/"; done
cp -uL /lib64/ld-linux-x86-64.so.2 "$dir/lib64/"
cp -u "$(dirname "$0")/registry.yml" "$dir/registry.yml"
echo "$dir"
