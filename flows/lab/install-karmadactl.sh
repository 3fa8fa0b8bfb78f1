#!/bin/sh
# install-karmadactl.sh VERSION [SHA256] [DEST] — installs karmadactl VERSION from Karmada's
# release tarball (what hack/install-cli.sh downloads), checked against SHA256 or, when that
# is empty, against the .sha256 file published with the release. A karmadactl at DEST that
# already reports VERSION is left alone.
set -eu

version=$1
want=${2:-}
dest=${3:-/usr/local/bin/karmadactl}

if [ -x "$dest" ] && "$dest" version 2>/dev/null | grep -q "GitVersion:\"$version\""; then
	echo "karmadactl $version at $dest already present"
	exit 0
fi

arch=$(dpkg --print-architecture) # amd64 or arm64, as the release names them
tgz="karmadactl-linux-$arch.tgz"
base="https://github.com/karmada-io/karmada/releases/download/$version"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

echo "downloading $base/$tgz"
curl -fsSL --retry 3 -o "$tmp/$tgz" "$base/$tgz"
if [ -z "$want" ]; then
	curl -fsSL --retry 3 -o "$tmp/$tgz.sha256" "$base/$tgz.sha256"
	want=$(awk '{print $1; exit}' "$tmp/$tgz.sha256")
fi
echo "$want  $tmp/$tgz" | sha256sum -c -

tar -xzf "$tmp/$tgz" -C "$tmp" karmadactl
# Written beside DEST and renamed: a run killed half way never leaves a truncated binary.
install -D -m 0755 "$tmp/karmadactl" "$dest.tmp"
mv -f "$dest.tmp" "$dest"
"$dest" version
