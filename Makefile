# flow — build, test, benchmark and demo. `make test` is what CI runs.
GO       ?= go
BIN      := bin/flow
PKGS     := ./...
export GOFLAGS := -buildvcs=false

.PHONY: all build test unit e2e bench bench-images bench-lab demo demo-resume demo-teardown lab-setup fmt lint clean

all: build

build:
	$(GO) build -o $(BIN) ./cmd/flow

# Everything the tests need is installed and started by the project itself:
# scripts/prereqs.sh checks (and on a fresh machine installs) the tools they use, and
# scripts/lab-setup.sh installs and starts the LXD daemon the LXD tests talk to.
test: build
	bash scripts/prereqs.sh
	bash scripts/lab-setup.sh
	$(GO) vet $(PKGS)
	@test -z "$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))" || { echo "gofmt needed:"; gofmt -l .; exit 1; }
	./$(BIN) fmt --check flows
	$(GO) test -count=1 -timeout 20m $(PKGS)

# staticcheck, built once from the Go module proxy into the Go cache's bin directory.
STATICCHECK := $(shell $(GO) env GOPATH)/bin/staticcheck
lint:
	test -x $(STATICCHECK) || (cd /tmp && GOFLAGS=-mod=mod $(GO) install honnef.co/go/tools/cmd/staticcheck@v0.6.1)
	$(STATICCHECK) ./...

# Everything but the end-to-end tests, for a quick loop while editing.
unit:
	$(GO) test -count=1 $$($(GO) list ./... | grep -v /e2e)

e2e: build
	$(GO) test -count=1 -v -timeout 20m ./e2e/...

# Benchmarks are never part of `make test`: they measure, they do not assert.
bench: build
	$(GO) test -run '^$$' -bench . -benchmem -benchtime 3x ./engine/...
	bash scripts/bench.sh
	bash scripts/bench-images.sh
	bash scripts/bench-lab.sh

# One benchmark family at a time (see docs/performance.md).
bench-images: build
	bash scripts/bench-images.sh

bench-lab: build
	bash scripts/bench-lab.sh

# The main job on this machine: the local lab (LXD members behind proxy devices on
# 127.0.0.1:16441/16442/16444, a registry on 127.0.0.1:32000). Interrupt it, then
# `make demo-resume`; `make demo-teardown` removes everything it created.
DEMO_STATE := .flow/local-lab.db
lab-setup:
	bash scripts/lab-setup.sh

demo: build lab-setup
	./$(BIN) run flows/local-lab.hcl --new --state $(DEMO_STATE)

demo-resume: build
	./$(BIN) resume --state $(DEMO_STATE)

demo-teardown: build
	./$(BIN) run flows/local-lab-teardown.hcl --new --state .flow/local-lab-teardown.db

fmt:
	gofmt -w $$(git ls-files '*.go')
	./$(BIN) fmt flows

clean:
	rm -rf bin .flow
