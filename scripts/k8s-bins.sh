#!/usr/bin/env bash
# Builds the Kubernetes and Karmada binaries the tests, the member image and the
# Karmada labs run, once per version, from the Go module proxy, and installs
# Debian's etcd. Binaries are cached in $FLOW_BIN_CACHE (default
# ~/.cache/flow/bin) under NAME-VERSION; a cached binary is never rebuilt.
# Prints the cache directory on its last line. Build times are logged to
# $FLOW_BIN_CACHE/build-times.log (docs/performance.md quotes them).
#
#   scripts/k8s-bins.sh            build what is missing
#   K8S_VERSION=v1.31.4 KARMADA_VERSION=v1.13.0 scripts/k8s-bins.sh
set -euo pipefail

K8S_VERSION="${K8S_VERSION:-v1.31.4}"
KARMADA_VERSION="${KARMADA_VERSION:-v1.13.0}"
CACHE="${FLOW_BIN_CACHE:-$HOME/.cache/flow/bin}"
mkdir -p "$CACHE"
export GOFLAGS=-mod=mod CGO_ENABLED=0

log() { echo "k8s-bins: $*" >&2; }
fail() { log "$*"; exit 1; }

timed_build() { # timed_build NAME OUT BUILD-COMMAND...
  local name=$1 out=$2; shift 2
  local start=$SECONDS
  log "building $name (this takes minutes, once per version)"
  "$@" || fail "building $name failed"
  mv "$out.tmp.$$" "$out"
  echo "$(date -u +%FT%TZ) $name $((SECONDS - start))s" >>"$CACHE/build-times.log"
  log "built $name in $((SECONDS - start))s"
}

# without_service_start CMD...: runs CMD with Debian's policy-rc.d convention
# telling invoke-rc.d and deb-systemd-invoke to start no service, so installing
# etcd-server never starts a system etcd on 2379 that we would then have to stop.
# A policy-rc.d the machine already has is left alone (and then obeyed).
without_service_start() {
  local policy=/usr/sbin/policy-rc.d ours=
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod 0755 "$policy" && ours=1
  fi
  local rc=0
  DEBIAN_FRONTEND=noninteractive "$@" || rc=$?
  [ -n "$ours" ] && rm -f "$policy"
  return $rc
}

# etcd: Debian's etcd-server (3.4), as the member containers and the Karmada
# API server use it.
if ! command -v etcd >/dev/null; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    log "installing etcd-server"
    apt-get update -qq >/dev/null
    without_service_start apt-get install -y -qq etcd-server >/dev/null
  fi
  command -v etcd >/dev/null || fail "etcd is missing (Debian package etcd-server)"
fi

# Kubernetes: k8s.io/kubernetes replaces its staging modules, so it builds
# only from a wrapper module that repeats every replace line.
k8s_build() {
  local dir="$CACHE/src/kubernetes-$K8S_VERSION" minor="v0${K8S_VERSION#v1}"
  mkdir -p "$dir"
  local tools='package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver/app"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	_ "k8s.io/kubernetes/cmd/kube-proxy/app"
	_ "k8s.io/kubernetes/cmd/kube-scheduler/app"
	_ "k8s.io/kubernetes/cmd/kubelet/app"
)'
  # The module is resolved again only when the set of commands changes.
  if [ ! -f "$dir/go.sum" ] || [ "$(cat "$dir/tools.go" 2>/dev/null)" != "$tools" ]; then
    {
      echo "module flowk8sbuild"
      echo "go 1.23"
      echo "require k8s.io/kubernetes $K8S_VERSION"
      for m in api apiextensions-apiserver apimachinery apiserver cli-runtime client-go \
        cloud-provider cluster-bootstrap code-generator component-base component-helpers \
        controller-manager cri-api cri-client csi-translation-lib dynamic-resource-allocation \
        endpointslice kms kube-aggregator kube-controller-manager kube-proxy kube-scheduler \
        kubectl kubelet metrics mount-utils pod-security-admission sample-apiserver; do
        echo "replace k8s.io/$m => k8s.io/$m $minor"
      done
    } >"$dir/go.mod"
    printf '%s\n' "$tools" >"$dir/tools.go"
    (cd "$dir" && go mod tidy) || fail "resolving k8s.io/kubernetes $K8S_VERSION"
  fi
  local ld="-s -w -X k8s.io/component-base/version.gitVersion=$K8S_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$(echo "$K8S_VERSION" | cut -d. -f2)"
  for cmd in kube-apiserver kube-controller-manager kube-scheduler kube-proxy kubelet; do
    local out="$CACHE/$cmd-$K8S_VERSION"
    [ -x "$out" ] && continue
    timed_build "$cmd $K8S_VERSION" "$out" \
      bash -c "cd '$dir' && go build -trimpath -ldflags '$ld' -o '$out.tmp.$$' k8s.io/kubernetes/cmd/$cmd"
  done
}

karmada_build() {
  local dir="$CACHE/src/karmada-$KARMADA_VERSION"
  mkdir -p "$dir"
  if [ ! -f "$dir/go.sum" ]; then
    printf 'module flowkarmadabuild\ngo 1.23\n' >"$dir/go.mod"
    cat >"$dir/tools.go" <<'EOF'
package tools

import (
	_ "github.com/karmada-io/karmada/pkg/karmadactl"
)
EOF
    (cd "$dir" && go get "github.com/karmada-io/karmada@$KARMADA_VERSION" && go mod tidy) ||
      fail "resolving github.com/karmada-io/karmada $KARMADA_VERSION"
  fi
  local ld="-s -w -X github.com/karmada-io/karmada/pkg/version.gitVersion=$KARMADA_VERSION"
  local name pkg
  for pair in karmadactl:cmd/karmadactl karmada-controller-manager:cmd/controller-manager \
    karmada-scheduler:cmd/scheduler karmada-webhook:cmd/webhook \
    karmada-aggregated-apiserver:cmd/aggregated-apiserver karmada-agent:cmd/agent; do
    name=${pair%%:*} pkg=${pair#*:}
    local out="$CACHE/$name-$KARMADA_VERSION"
    [ -x "$out" ] && continue
    timed_build "$name $KARMADA_VERSION" "$out" \
      bash -c "cd '$dir' && go build -trimpath -ldflags '$ld' -o '$out.tmp.$$' github.com/karmada-io/karmada/$pkg"
  done
  # Karmada's CRDs ship in the module; the karmada-apiserver is a plain
  # kube-apiserver with these applied.
  local crds="$CACHE/karmada-crds-$KARMADA_VERSION"
  if [ ! -d "$crds" ]; then
    local src
    src="$(cd "$dir" && go list -m -f '{{.Dir}}' github.com/karmada-io/karmada)/charts/karmada/_crds/bases"
    [ -d "$src" ] || fail "no CRDs at $src"
    rm -rf "$crds.tmp.$$" && cp -r "$src" "$crds.tmp.$$" && chmod -R u+w "$crds.tmp.$$" && mv "$crds.tmp.$$" "$crds"
  fi
  # The same CRDs as `karmadactl init --crds` takes them offline: crds/ with bases/ and
  # patches/ in a tar.gz, a directory entry for every level (init's unpacking makes each
  # directory with mkdir, not mkdir -p); its default is a download from the release.
  local tgz="$CACHE/karmada-crds-$KARMADA_VERSION.tar.gz"
  if [ ! -f "$tgz" ]; then
    local charts
    charts="$(cd "$dir" && go list -m -f '{{.Dir}}' github.com/karmada-io/karmada)/charts/karmada"
    tar -C "$charts" --transform 's,^_crds,crds,' --owner=0 --group=0 --mode=u+w -czf "$tgz.tmp.$$" _crds &&
      mv "$tgz.tmp.$$" "$tgz" || fail "packing Karmada's CRDs"
  fi
}

# CoreDNS, the members' cluster DNS (the image MicroK8s's dns addon runs), from its own
# module: a plain `go build` of its main package with every plugin it ships.
COREDNS_VERSION="${COREDNS_VERSION:-v1.11.3}"
coredns_build() {
  local dir="$CACHE/src/coredns-$COREDNS_VERSION" out="$CACHE/coredns-$COREDNS_VERSION"
  [ -x "$out" ] && return
  mkdir -p "$dir"
  if [ ! -f "$dir/go.sum" ]; then
    printf 'module flowcorednsbuild\ngo 1.23\n' >"$dir/go.mod"
    printf 'package tools\n\nimport _ "github.com/coredns/coredns/core/plugin"\n' >"$dir/tools.go"
    (cd "$dir" && go get "github.com/coredns/coredns@$COREDNS_VERSION" && go mod tidy) ||
      fail "resolving github.com/coredns/coredns $COREDNS_VERSION"
  fi
  timed_build "coredns $COREDNS_VERSION" "$out" \
    bash -c "cd '$dir' && go build -trimpath -ldflags '-s -w' -o '$out.tmp.$$' github.com/coredns/coredns"
}

k8s_build
karmada_build
coredns_build
echo "$CACHE"
