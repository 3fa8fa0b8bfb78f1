#!/usr/bin/env bash
# The fresh-path test (`make fresh-path`, the last step of `make test`): what a new user
# runs on a bare machine, run here the first time, as the README says it. It makes this
# machine as fresh as a test can without losing Go's module and build caches (so the
# Kubernetes, Karmada and CoreDNS binaries re-link rather than recompile):
#
#   - removes the host packages the lab installs for itself (exec.host_packages:
#     mmdebstrap, busybox-static, docker-registry, kubernetes-client);
#   - gives the run a new empty HOME, so every flow cache under ~/.cache/flow (binaries,
#     Debian roots and their download cache) starts empty;
#   - clones the repository afresh, so .lab (the member image, the images' layers, the
#     busybox image) and .flow (state) start empty;
#   - deletes the LXD images the lab imports (flow-member, flow-lab-busybox);
#
# Before that, scripts/fresh-gomod.sh: flow built with an empty module cache, then what
# docs/plugins.md has a plugin author build offline from it.
#
# then runs `make demo` once, which must succeed on the first attempt (no resume), and
# `make demo-teardown`. Prints how long each took. Needs root and the LXD daemon (make
# lab-setup), and no lab running: it refuses, naming what runs, rather than delete it.
#
#   scripts/fresh-path.sh              the committed HEAD
#   FRESH_REV=1a80727 scripts/fresh-path.sh   another revision (to see an old one fail)
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
log() { echo "fresh-path: $*" >&2; }
fail() { log "$*"; exit 1; }

[ "$(id -u)" = 0 ] || fail "needs root (apt-get, LXD)"
lxc info >/dev/null 2>&1 || fail "the LXD daemon is not running (make lab-setup)"
running=$(lxc list -f csv -c n | grep -xE 'member[0-9]+|karmada-host|lab-registry|lab-upstream' || true)
[ -z "$running" ] || fail "lab instances exist ($(echo $running)): tear the lab down first (make demo-teardown)"

# Go's module cache, as a machine that has only built flow has it: scripts/fresh-gomod.sh
# builds flow with an empty GOMODCACHE of its own, then the SDK, examples/go-plugin and
# docs/plugins.md's Go walkthrough offline from it.
bash scripts/fresh-gomod.sh || fail "building the plugin SDK and the docs' Go plugin from a fresh module cache failed"

# Go's caches stay where they are; everything under the new HOME starts empty.
export GOCACHE GOMODCACHE GOPATH
GOCACHE=$(go env GOCACHE) GOMODCACHE=$(go env GOMODCACHE) GOPATH=$(go env GOPATH)
work=$(mktemp -d /tmp/flow-fresh.XXXXXX)
trap 'rm -rf "$work"' EXIT
export HOME=$work/home
mkdir -p "$HOME"

log "removing the lab's host packages"
DEBIAN_FRONTEND=noninteractive apt-get remove -y -qq -o DPkg::Lock::Timeout=600 \
  mmdebstrap busybox-static docker-registry kubernetes-client >/dev/null
for alias in flow-member flow-lab-busybox; do
  lxc image delete "$alias" 2>/dev/null && log "deleted LXD image $alias" || true
done

git clone -q "$repo" "$work/flow"
git -C "$work/flow" checkout -q "${FRESH_REV:-HEAD}"
log "make demo in a fresh clone at $(git -C "$work/flow" rev-parse --short HEAD), HOME=$HOME"
cd "$work/flow"
start=$SECONDS
rc=0
make demo || rc=$?
took=$((SECONDS - start))
if [ $rc -ne 0 ]; then
  log "make demo failed on the first attempt after ${took}s (exit $rc); tearing down"
  make demo-teardown >/dev/null 2>&1 || true
  exit 1
fi
log "make demo succeeded on the first attempt in ${took}s"
# What the run's last output tells a new user to try must work: kubectl, installed by the lab.
kubectl --kubeconfig .lab/k8s-lab/member1.config get nodes || fail "kubectl against member1 failed after make demo"
start=$SECONDS
make demo-teardown
log "make demo-teardown took $((SECONDS - start))s"
