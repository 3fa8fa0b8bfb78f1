#!/usr/bin/env bash
# A container image's Debian root file system for the k8s lab: scripts/debian-rootfs.sh
# builds (or finds) the tarball, and this gzips it once into .lab/images/rootfs (gzip -n:
# the same tar gives the same bytes, so image_build's digest of the layer is stable).
# Prints the .tar.gz path.
#
#   scripts/image-rootfs.sh NAME PACKAGE...
set -euo pipefail
cd "$(dirname "$0")/.."
name=${1:?usage: image-rootfs.sh NAME PACKAGE...}
shift
tar=$(bash scripts/debian-rootfs.sh "image-$name" "$@" | tail -n1)
gz=.lab/images/rootfs/$(basename "$tar").gz
if [ ! -s "$gz" ]; then
  mkdir -p .lab/images/rootfs
  tmp=$(mktemp "$gz.XXXXXX") # its own: a gzip that outlived a killed run writes elsewhere
  gzip -1 -n -c "$tar" >"$tmp" && mv "$tmp" "$gz"
fi
echo "$PWD/$gz"
