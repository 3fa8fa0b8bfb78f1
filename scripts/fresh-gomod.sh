#!/usr/bin/env bash
# What a new machine's module cache holds, tested (part of `make fresh-path`, runnable on
# its own, no root): a fresh clone, a private empty GOMODCACHE, flow built as `make build`
# builds it (the module proxy fetches what that needs, and nothing more), then, offline
# (GOPROXY=off), what `make test` and docs/plugins.md build from that cache: the SDK
# module's vet and tests, examples/go-plugin (TestPluginSDKs) and the page's Go
# walkthrough (TestPluginDocs). A module only an author's offline build needs, missing
# from the cache, fails here (issue 39: github.com/mattn/go-colorable@v0.1.9).
#
#   scripts/fresh-gomod.sh                    the committed HEAD
#   FRESH_REV=c662e36 scripts/fresh-gomod.sh  another revision (to see an old one fail)
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
log() { echo "fresh-gomod: $*" >&2; }

work=$(mktemp -d /tmp/flow-fresh-gomod.XXXXXX)
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
export GOMODCACHE=$work/modcache GOFLAGS="-modcacherw -buildvcs=false" GOWORK=off
git clone -q "$repo" "$work/flow"
git -C "$work/flow" checkout -q "${FRESH_REV:-HEAD}"
cd "$work/flow"
log "make build at $(git rev-parse --short HEAD) with an empty GOMODCACHE ($GOMODCACHE)"
make --no-print-directory build >/dev/null
# The e2e package's own test dependencies (go test compiles it): fetched, as a machine
# that runs make test has them; nothing of the SDK's module graph is among them.
go list -test -deps ./e2e/ >/dev/null
log "offline from here: the SDK module, examples/go-plugin, the docs' Go walkthrough"
export GOPROXY=off
(cd plugin/sdk && GOFLAGS="$GOFLAGS -mod=readonly" go vet ./... && GOFLAGS="$GOFLAGS -mod=readonly" go test -count=1 ./...)
go test -count=1 -run '^(TestPluginDocs|TestPluginSDKs)$' ./e2e/
log "ok"
