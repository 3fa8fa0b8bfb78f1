#!/usr/bin/env bash
# Builds the Kubernetes, Karmada and CoreDNS binaries the tests, the member image and
# the labs run, once per version, from the Go module proxy. Binaries are cached in
# $FLOW_BIN_CACHE (default ~/.cache/flow/bin) under NAME-VERSION; a cached binary is
# never rebuilt. Each build's time is appended to build-times.log there, and the next
# build of the same binary says how long it took last time (docs/performance.md quotes
# the first figures).
#
#   scripts/k8s-bins.sh                 everything `make test` needs: Debian's etcd on
#                                       this machine and every binary; prints the cache
#   scripts/k8s-bins.sh module FAMILY   resolves and downloads the modules of kubernetes,
#                                       karmada or coredns; prints the module's directory
#   scripts/k8s-bins.sh build NAME      builds one binary (or karmada-crds, the CRD
#                                       tarball; or hostpath-provisioner, the lab's
#                                       storage, from flows/k8s-lab/hostpath); prints
#                                       its path
#   scripts/k8s-bins.sh build metrics-server
#                                       metrics-server (module family metrics-server,
#                                       METRICS_SERVER_VERSION): not in everything above,
#                                       the lab builds it only under var.metrics_server
#
# The lab flow (flows/k8s-lab/bins.hcl) runs `module` and `build` as tasks of their own.
# Two builds in one family at once would compile the packages they share twice.
set -euo pipefail
cd "$(dirname "$0")/.."

K8S_VERSION="${K8S_VERSION:-v1.31.4}"
KARMADA_VERSION="${KARMADA_VERSION:-v1.13.0}"
COREDNS_VERSION="${COREDNS_VERSION:-v1.11.3}"
METRICS_SERVER_VERSION="${METRICS_SERVER_VERSION:-v0.8.0}"
CACHE="${FLOW_BIN_CACHE:-$HOME/.cache/flow/bin}"
mkdir -p "$CACHE"
export GOFLAGS=-mod=mod CGO_ENABLED=0

log() { echo "k8s-bins: $*" >&2; }
fail() { log "$*"; exit 1; }

kube_bins=(kube-apiserver kube-controller-manager kube-scheduler kube-proxy kubelet)
karmada_bins=(karmadactl karmada-controller-manager karmada-scheduler karmada-webhook
  karmada-aggregated-apiserver karmada-agent)
# The addons (karmadactl addons enable): built when the lab's karmada_addons names them.
karmada_addon_bins=(karmada-search karmada-descheduler karmada-scheduler-estimator karmada-metrics-adapter)
# The plugins the members' Corefile (flows/k8s-lab/member/coredns.yaml) uses: CoreDNS
# is built with these alone, as its plugin.cfg lets a distribution do, not all 50.
coredns_plugins=(errors health ready kubernetes cache loop reload loadbalance)
coredns_key=$(printf '%s\n' "${coredns_plugins[@]}" | sha256sum | cut -c1-8)

# First builds on 2 cores (docs/performance.md), said when this machine has no time yet.
declare -A documented=([kube-apiserver]=300 [kube-controller-manager]=100 [kube-scheduler]=20
  [kube-proxy]=30 [kubelet]=110 [karmadactl]=150 [karmada-controller-manager]=80
  [karmada-scheduler]=30 [karmada-webhook]=15 [karmada-aggregated-apiserver]=160
  [karmada-agent]=10 [coredns]=120 [module-kubernetes]=120 [module-karmada]=90 [module-coredns]=40
  [hostpath-provisioner]=60)
documented+=([metrics-server]=210 [module-metrics-server]=30)

# expect NAME VERSION: how long NAME took last time here, or the documented figure.
expect() {
  local last
  last=$(awk -v n="$1" -v v="$2" '$2 == n && $3 == v {t = $4} END {print t}' "$CACHE/build-times.log" 2>/dev/null || true)
  if [ -n "$last" ]; then echo "$last last time on this machine"; else echo "about ${documented[$1]:-?}s on 2 cores"; fi
}

timed() { # timed NAME VERSION COMMAND...: runs COMMAND, logs how long it took
  local name=$1 version=$2; shift 2
  local start=$SECONDS
  log "building $name $version ($(expect "$name" "$version"))"
  "$@" || fail "building $name $version failed"
  echo "$(date -u +%FT%TZ) $name $version $((SECONDS - start))s" >>"$CACHE/build-times.log"
  log "built $name $version in $((SECONDS - start))s"
}

family_of() {
  case $1 in
  hostpath-provisioner) echo hostpath ;;
  kube-* | kubelet) echo kubernetes ;;
  karmada*) echo karmada ;;
  coredns) echo coredns ;;
  metrics-server) echo metrics-server ;;
  *) fail "no binary $1 (known: ${kube_bins[*]} ${karmada_bins[*]} ${karmada_addon_bins[*]} karmada-crds coredns)" ;;
  esac
}

version_of() {
  [ "$1" = metrics-server ] && { echo "$METRICS_SERVER_VERSION"; return; }
  case $1 in kubernetes) echo "$K8S_VERSION" ;; karmada) echo "$KARMADA_VERSION" ;; coredns) echo "$COREDNS_VERSION" ;; esac
}

module_dir() { echo "$CACHE/src/$1-$(version_of "$1")"; }

# Kubernetes: k8s.io/kubernetes replaces its staging modules, so it builds only from a
# wrapper module that repeats every replace line.
write_kubernetes() {
  local minor="v0${K8S_VERSION#v1}" m
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
}

kubernetes_tools='package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver/app"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	_ "k8s.io/kubernetes/cmd/kube-proxy/app"
	_ "k8s.io/kubernetes/cmd/kube-scheduler/app"
	_ "k8s.io/kubernetes/cmd/kubelet/app"
)'

karmada_tools='package tools

import (
	_ "github.com/karmada-io/karmada/pkg/karmadactl"
)'

# metrics-server's command package is a main: the wrapper imports its app package, which
# holds everything the command builds, so go mod tidy downloads all of it.
metrics_server_tools='package tools

import (
	_ "sigs.k8s.io/metrics-server/cmd/metrics-server/app"
)'

coredns_main() {
  echo 'package main'
  echo
  echo 'import ('
  echo '	"github.com/coredns/coredns/coremain"'
  local p
  for p in "${coredns_plugins[@]}"; do echo "	_ \"github.com/coredns/coredns/plugin/$p\""; done
  echo ')'
  echo
  echo 'func main() { coremain.Run() }'
}

# module FAMILY: the wrapper module, resolved (go mod tidy downloads what it builds).
# Resolved again only when what it holds changes; a stamp says it is complete.
module() {
  local family=$1 dir src
  dir=$(module_dir "$family")
  case $family in
  kubernetes) src="$(write_kubernetes)"$'\n'"$kubernetes_tools" ;;
  karmada) src="require github.com/karmada-io/karmada $KARMADA_VERSION"$'\n'"$karmada_tools" ;;
  coredns) src="require github.com/coredns/coredns $COREDNS_VERSION"$'\n'"$(coredns_main)" ;;
  metrics-server) src="require sigs.k8s.io/metrics-server $METRICS_SERVER_VERSION"$'\n'"$metrics_server_tools" ;;
  *) fail "no module family $family (kubernetes, karmada, coredns)" ;;
  esac
  local want
  want=$(printf '%s' "$src" | sha256sum | cut -c1-16)
  if [ "$(cat "$dir/.resolved" 2>/dev/null)" = "$want" ]; then echo "$dir"; return; fi
  local start=$SECONDS
  log "resolving and downloading the $family $(version_of "$family") modules ($(expect "module-$family" "$(version_of "$family")"))"
  rm -rf "$dir" && mkdir -p "$dir"
  case $family in
  kubernetes)
    write_kubernetes >"$dir/go.mod"
    printf '%s\n' "$kubernetes_tools" >"$dir/tools.go"
    ;;
  karmada)
    printf 'module flowkarmadabuild\ngo 1.23\nrequire github.com/karmada-io/karmada %s\n' "$KARMADA_VERSION" >"$dir/go.mod"
    printf '%s\n' "$karmada_tools" >"$dir/tools.go"
    ;;
  coredns)
    printf 'module flowcorednsbuild\ngo 1.23\nrequire github.com/coredns/coredns %s\n' "$COREDNS_VERSION" >"$dir/go.mod"
    coredns_main >"$dir/main.go"
    ;;
  metrics-server)
    printf 'module flowmetricsserverbuild\ngo 1.24\nrequire sigs.k8s.io/metrics-server %s\n' "$METRICS_SERVER_VERSION" >"$dir/go.mod"
    printf '%s\n' "$metrics_server_tools" >"$dir/tools.go"
    ;;
  esac
  (cd "$dir" && go mod tidy >&2) || fail "resolving the $family $(version_of "$family") modules"
  echo "$want" >"$dir/.resolved"
  echo "$(date -u +%FT%TZ) module-$family $(version_of "$family") $((SECONDS - start))s" >>"$CACHE/build-times.log"
  echo "$dir"
}

# hostpath: the lab's own module in this repository, cached by a hash of its sources.
hostpath() {
  local src=flows/k8s-lab/hostpath key out
  key=$(cat "$src/go.mod" "$src/go.sum" "$src"/*.go | sha256sum | cut -c1-12)
  out="$CACHE/hostpath-provisioner-$key"
  if [ -x "$out" ]; then echo "$out"; return; fi
  timed hostpath-provisioner "$key" bash -c "cd '$src' && go build -trimpath -ldflags '-s -w' -o '$out.tmp.$$' ."
  mv "$out.tmp.$$" "$out"
  echo "$out"
}

# build NAME: one binary into the cache, from its family's module.
build() {
  local name=$1 family dir version out ld pkg
  if [ "$name" = hostpath-provisioner ]; then hostpath; return; fi
  family=$(family_of "$name")
  version=$(version_of "$family")
  if [ "$name" = karmada-crds ]; then crds; return; fi
  out="$CACHE/$name-$version"
  [ "$name" = coredns ] && out="$CACHE/coredns-$version-$coredns_key"
  if [ -x "$out" ]; then echo "$out"; return; fi
  dir=$(module "$family")
  case $family in
  kubernetes)
    ld="-s -w -X k8s.io/component-base/version.gitVersion=$version -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$(echo "$version" | cut -d. -f2)"
    pkg=k8s.io/kubernetes/cmd/$name
    ;;
  karmada)
    ld="-s -w -X github.com/karmada-io/karmada/pkg/version.gitVersion=$version"
    case $name in
    karmadactl | karmada-search) pkg=cmd/$name ;;
    *) pkg=cmd/${name#karmada-} ;;
    esac
    # Upstream's example interpreter webhook (its e2e suite's webhook specs), not a command.
    case $name in karmada-interpreter-webhook-example) pkg=examples/customresourceinterpreter/webhook ;; esac
    pkg=github.com/karmada-io/karmada/$pkg
    ;;
  coredns)
    ld="-s -w -X github.com/coredns/coredns/coremain.GitCommit=$version"
    pkg=.
    ;;
  metrics-server)
    # Where upstream's Makefile puts the version (its PKG is client-go's pkg).
    ld="-s -w -X k8s.io/client-go/pkg/version.gitVersion=$version"
    pkg=sigs.k8s.io/metrics-server/cmd/metrics-server
    ;;
  esac
  timed "$name" "$version" bash -c "cd '$dir' && go build -trimpath -ldflags '$ld' -o '$out.tmp.$$' $pkg"
  mv "$out.tmp.$$" "$out"
  echo "$out"
}

# Karmada's CRDs ship in its module: the karmada-apiserver of the tests is a plain
# kube-apiserver with these applied, and `karmadactl init --crds` takes the same as a
# tar.gz of crds/ with bases/ and patches/, a directory entry for every level (init's
# unpacking makes each directory with mkdir, not mkdir -p); its default is a download.
crds() {
  local dir charts
  dir=$(module karmada)
  charts="$(cd "$dir" && go list -m -f '{{.Dir}}' github.com/karmada-io/karmada)/charts/karmada"
  local out="$CACHE/karmada-crds-$KARMADA_VERSION"
  if [ ! -d "$out" ]; then
    [ -d "$charts/_crds/bases" ] || fail "no CRDs at $charts/_crds/bases"
    rm -rf "$out.tmp.$$" && cp -r "$charts/_crds/bases" "$out.tmp.$$" && chmod -R u+w "$out.tmp.$$" && mv "$out.tmp.$$" "$out"
  fi
  local tgz="$out.tar.gz"
  if [ ! -f "$tgz" ]; then
    tar -C "$charts" --transform 's,^_crds,crds,' --owner=0 --group=0 --mode=u+w -czf "$tgz.tmp.$$" _crds &&
      mv "$tgz.tmp.$$" "$tgz" || fail "packing Karmada's CRDs"
  fi
  echo "$tgz"
}

case ${1:-all} in
module) module "${2:?usage: k8s-bins.sh module kubernetes|karmada|coredns}" ;;
build) build "${2:?usage: k8s-bins.sh build NAME}" ;;
all)
  # etcd: Debian's etcd-server (3.4), as the Karmada local lab and the tests run it on
  # this machine; no system etcd is started on 2379.
  command -v etcd >/dev/null || APT_NO_SERVICE_START=1 bash scripts/apt-install.sh etcd-server ||
    fail "etcd is missing (Debian package etcd-server)"
  for b in "${kube_bins[@]}" "${karmada_bins[@]}" karmada-crds coredns hostpath-provisioner; do build "$b" >/dev/null; done
  echo "$CACHE"
  ;;
*) fail "usage: k8s-bins.sh [module FAMILY | build NAME]" ;;
esac
