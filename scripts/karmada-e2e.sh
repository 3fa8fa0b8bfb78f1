#!/usr/bin/env bash
# Karmada's own end-to-end suite (upstream's test/e2e/suites/base, ginkgo) against the
# running k8s lab (make demo), unmodified: built from the Go module proxy at the lab's
# Karmada version, run with the lab's kubeconfigs.
#
#   scripts/karmada-e2e.sh build        builds the suite once (cached by version), prints its path
#   scripts/karmada-e2e.sh run full     every spec that fits a single-host lab (make karmada-e2e)
#   scripts/karmada-e2e.sh run ci       the focused subset make test runs (flows/karmada-e2e/ci.txt)
#   scripts/karmada-e2e.sh run FILE_test.go...   the specs of those files of the suite
#   scripts/karmada-e2e.sh list         the specs left out, each with its reason
#
# What fits is in flows/karmada-e2e/: leave-out.txt names the specs left out and why,
# ci.txt the files of the focused subset. The images the suite names (nginx:1.19.0, perl,
# ...) come from the lab registry: run flows/karmada-e2e.hcl first (make karmada-e2e does).
#
# Environment: CONFIG_DIR (default .lab/k8s-lab, the lab's config dir), REPORT (default
# .lab/karmada-e2e/SET.json, ginkgo's JSON report), KARMADA_VERSION (default v1.13.0).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
CACHE=${FLOW_BIN_CACHE:-$HOME/.cache/flow/bin}
KARMADA_VERSION=${KARMADA_VERSION:-v1.13.0}
CONFIG_DIR=${CONFIG_DIR:-$root/.lab/k8s-lab}
specs=$root/flows/karmada-e2e
fail() { echo "karmada-e2e: $*" >&2; exit 1; }

# The suite's module needs ginkgo, gomega and kind (test dependencies of Karmada that its
# own go.mod lists but a build of its commands never downloads), at Karmada's versions.
suite_deps=(github.com/onsi/ginkgo/v2@v2.20.1 github.com/onsi/gomega@v1.34.1 sigs.k8s.io/kind@v0.25.0)

build() {
  local out=$CACHE/karmada-e2e-base-$KARMADA_VERSION
  if [ -x "$out" ]; then echo "$out"; return; fi
  local dir=$CACHE/src/karmada-e2e-$KARMADA_VERSION
  mkdir -p "$dir"
  printf 'module flowkarmadae2e\ngo 1.23\nrequire github.com/karmada-io/karmada %s\n' "$KARMADA_VERSION" >"$dir/go.mod"
  echo "karmada-e2e: building upstream's e2e suite $KARMADA_VERSION (about 2 minutes the first time)" >&2
  (cd "$dir" && go get "${suite_deps[@]}" >&2 &&
    go test -mod=mod -c -o "$out.tmp" github.com/karmada-io/karmada/test/e2e/suites/base >&2)
  mv "$out.tmp" "$out"
  echo "$out"
}

# lines FILE: the lines of FILE without comments and blank lines.
lines() { sed -e 's/[[:space:]]*#.*//' -e '/^[[:space:]]*$/d' "$1"; }

# kubeconfig: the host cluster's and Karmada's kubeconfigs in one file, contexts
# karmada-host and karmada-apiserver, as the suite's --host-context and --karmada-context
# default to. It holds keys: the lab's config dir, mode 0600.
kubeconfig() {
  local out=$CONFIG_DIR/karmada-e2e.config
  (umask 077 && KUBECONFIG=$CONFIG_DIR/karmada-host.config:$CONFIG_DIR/karmada/karmada-apiserver.config \
    kubectl config view --flatten >"$out.tmp" && mv "$out.tmp" "$out")
  echo "$out"
}

run() {
  local set=${1:?usage: karmada-e2e.sh run full|ci|FILE_test.go...}
  local bin report args=() line file rest
  bin=$(build)
  for f in karmada-host.config karmada/karmada-apiserver.config; do
    [ -s "$CONFIG_DIR/$f" ] || fail "no $CONFIG_DIR/$f: is the lab up? (make demo)"
  done
  case $set in
  full) ;;
  # A file filter is a regex on the spec's path: "/" before the name keeps
  # propagationpolicy_test.go from taking in clusterpropagationpolicy_test.go.
  ci) while read -r file; do args+=("--ginkgo.focus-file=/$file"); done < <(lines "$specs/ci.txt") ;;
  *_test.go) for file in "$@"; do args+=("--ginkgo.focus-file=/$file"); done; set=files ;;
  *) fail "no spec set $set (full, ci, or files of the suite: FILE_test.go...)" ;;
  esac
  # leave-out.txt: FILE[:REGEX] | reason, or label:LABEL | reason. A whole file, the
  # specs of FILE whose full text matches REGEX, or the specs with LABEL.
  local labels=""
  while IFS='|' read -r line rest; do
    line=$(sed -e "s/^[[:space:]]*//" -e "s/[[:space:]]*$//" <<<"$line")
    file=${line%%:*}
    case $line in
    label:*) labels+="${labels:+ && }!${line#label:}" ;;
    *:*) args+=("--ginkgo.skip=${line#*:}") ;;
    *) args+=("--ginkgo.skip-file=/$file") ;;
    esac
  done < <(lines "$specs/leave-out.txt")
  [ -z "$labels" ] || args+=("--ginkgo.label-filter=$labels")
  report=${REPORT:-$root/.lab/karmada-e2e/$set.json}
  mkdir -p "$(dirname "$report")"
  # The suite runs karmadactl from $(go env GOPATH)/bin: a GOPATH of its own holds the
  # lab's karmadactl there, so nothing is put into the user's GOPATH.
  local gopath=$CACHE/karmada-e2e-gopath
  mkdir -p "$gopath/bin"
  ln -sfn "$CACHE/karmadactl-$KARMADA_VERSION" "$gopath/bin/karmadactl"
  echo "karmada-e2e: running the $set set against $CONFIG_DIR (report: $report)" >&2
  local rc=0
  (cd "$(dirname "$report")" &&
    GOPATH=$gopath KUBECONFIG=$(kubeconfig) PULL_BASED_CLUSTERS="member3:$CONFIG_DIR/member3.config" \
      "$bin" -test.timeout=3h --ginkgo.no-color --ginkgo.timeout=3h --ginkgo.json-report="$report" \
      "${args[@]}") || rc=$?
  go run ./flows/karmada-e2e/report --leave-out "$specs/leave-out.txt" "$report" || true
  return $rc
}

case ${1:-} in
build) build ;;
run) shift; run "$@" ;;
list) lines "$specs/leave-out.txt" ;;
*) fail "usage: karmada-e2e.sh build | run full|ci|FILE_test.go... | list" ;;
esac
