# flow — build, test, benchmark and demo. `make test` is what CI runs.
GO       ?= go
BIN      := bin/flow
PKGS     := ./...
export GOFLAGS := -buildvcs=false

.PHONY: demo-jobs demo-jobs-teardown bench-jobs soak karmada-e2e karmada-e2e-ci all build test unit e2e bench bench-images bench-lab bench-k8s-lab demo demo-resume demo-teardown demo-2host demo-2host-resume demo-2host-teardown demo-2host-doctor demo-cluster demo-cluster-resume demo-cluster-teardown demo-cluster-doctor demo-drill demo-doctor demo-busybox demo-busybox-resume demo-busybox-teardown lab-setup k8s-bins fuzz fuzz-short fault-lxd fresh-path karmada-demo karmada-demo-resume karmada-demo-teardown fmt lint clean

all: build

build:
	$(GO) build -o $(BIN) ./cmd/flow
	$(GO) build -o bin/flow-plugin-host ./cmd/flow-plugin-host

# Everything the tests need is installed and started by the project itself:
# scripts/prereqs.sh checks (and on a fresh machine installs) the tools they use,
# scripts/lab-setup.sh installs and starts the LXD daemon the LXD tests talk to, and
# scripts/k8s-bins.sh installs etcd and builds the Kubernetes, Karmada and CoreDNS binaries
# once per version (the first time, the better part of half an hour on 2 cores); the
# Kubernetes lab's e2e test builds the Debian root file systems and images it needs
# through the lab flow itself, cached the same way.
test: build
	bash scripts/prereqs.sh
	bash scripts/lab-setup.sh
	bash scripts/k8s-bins.sh
	$(GO) vet $(PKGS)
	cd plugin/sdk && GOPROXY=off GOFLAGS=-mod=readonly $(GO) vet ./... && GOPROXY=off GOFLAGS=-mod=readonly $(GO) test -count=1 ./...  # the SDK, a module of its own
	@test -z "$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))" || { echo "gofmt needed:"; gofmt -l .; exit 1; }
	./$(BIN) fmt --check flows
	$(GO) test -count=1 -timeout 75m $(PKGS)
	$(MAKE) --no-print-directory fault-lxd
	$(MAKE) --no-print-directory fuzz-short
	$(MAKE) --no-print-directory fresh-path

# What a new user runs on a bare machine, tested (scripts/fresh-path.sh): the lab's host
# packages removed, every flow cache empty (a new HOME, a fresh clone, the lab's LXD
# images deleted), Go's caches kept; then `make demo` must succeed the first time, and
# `make demo-teardown`. Last, since it needs the lab's names and ports to itself.
fresh-path:
	bash scripts/fresh-path.sh

# The fault test that kills and restarts the shared LXD daemon (docs/reliability.md).
# A step of its own, after every other package's tests, so nothing else talks to the
# daemon meanwhile; `go test ./...` alone skips it.
fault-lxd: build
	FLOW_FAULT_TESTS=1 $(GO) test -count=1 -v -timeout 20m -run '^TestFaultLXDRestart$$' ./e2e/

# Native Go fuzz targets (docs/reliability.md). `go test` alone runs each one's seed
# corpus under testdata/fuzz/; `make test` then fuzzes each for FUZZTIME, and
# `make fuzz` for longer. A failing input is written to the package's
# testdata/fuzz/TARGET/: fix the bug and commit the input as a regression entry.
# Budgets are execution counts, not durations: with a duration, Go's fuzz
# coordinator (before Go 1.27, golang/go#75804) can report a bare "context
# deadline exceeded" at the deadline on a loaded machine, a failure with no
# input behind it. Minimizing a new input gets a count too, for the same reason.
FUZZ_TARGETS := ./engine/config:FuzzLoad ./engine/state:FuzzOpen ./engine/state:FuzzOpenPatched ./tasks/kube:FuzzKubeconfig
FUZZTIME ?= 8000x
fuzz-short:
	@for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; fn=$${t##*:}; \
		echo "fuzz $$fn ($$pkg) for $(FUZZTIME)"; \
		$(GO) test -run '^$$' -fuzz "^$$fn\$$" -fuzztime $(FUZZTIME) -fuzzminimizetime 2000x $$pkg || exit 1; \
	done

fuzz:
	$(MAKE) --no-print-directory fuzz-short FUZZTIME=300000x

# staticcheck, built once from the Go module proxy into the Go cache's bin directory.
STATICCHECK := $(shell $(GO) env GOPATH)/bin/staticcheck
lint:
	test -x $(STATICCHECK) || (cd /tmp && GOFLAGS=-mod=mod $(GO) install honnef.co/go/tools/cmd/staticcheck@v0.6.1)
	$(STATICCHECK) ./...

# For people changing the engine: the fault property tests (e2e/undo_fault_property_test.go)
# over SOAK_SEEDS random histories each, on a state file and in PostgreSQL (make test walks
# a few fixed seeds and one random). A failure prints its seed; FLOW_PROPERTY_SEED=N
# walks that history again.
SOAK_SEEDS ?= 40
soak: build
	bash scripts/prereqs.sh
	FLOW_SOAK_SEEDS=$(SOAK_SEEDS) $(GO) test -count=1 -v -timeout 90m -run '^TestUndoFaultProperty(Postgres)?$$' ./e2e/

# Everything but the end-to-end tests, for a quick loop while editing.
unit:
	$(GO) test -count=1 $$($(GO) list ./... | grep -v /e2e)

e2e: build
	$(GO) test -count=1 -v -timeout 20m ./e2e/...

# Benchmarks are never part of `make test`: they measure, they do not assert.
bench: build
	$(GO) test -run '^$$' -bench . -benchmem -benchtime 3x ./engine/...
	$(GO) test -run '^$$' -bench UI10k -benchtime 3x ./cmd/flow/ui
	bash scripts/bench-ui.sh
	bash scripts/bench.sh
	bash scripts/bench-images.sh
	bash scripts/bench-lab.sh

# One benchmark family at a time (see docs/performance.md).
bench-images: build
	bash scripts/bench-images.sh

bench-lab: build
	bash scripts/bench-lab.sh

bench-k8s-lab: build
	bash scripts/bench-k8s-lab.sh

# k8s_job against lxd_exec on the lab make demo built (docs/performance.md).
bench-jobs: build
	bash scripts/bench-jobs.sh

# The main job on this machine: the Kubernetes lab (flows/k8s-lab): three LXD members and a
# host cluster that are real single-node clusters, behind proxy devices on
# 127.0.0.1:16441/16442/16444 and 16443, a registry on 127.0.0.1:32000 preloaded with images
# built here, workloads running in them, and Karmada installed by karmadactl init in the
# host cluster with the members joined (push) and registered (pull). The first run builds
# what is missing, each piece a task of the flow (binaries, root file systems, the member
# image: 17 minutes on a fresh 2-core machine); later runs reuse every cache. Interrupt it, then
# `make demo-resume`; `make demo-teardown` (flow destroy) removes everything it created but
# the caches.
DEMO_STATE := .flow/k8s-lab.db
lab-setup:
	bash scripts/lab-setup.sh

demo: build lab-setup
	@echo "Watch the run in a browser: ./$(BIN) ui --state $(DEMO_STATE)   (then open http://127.0.0.1:8470/)"
	./$(BIN) run flows/k8s-lab --new --state $(DEMO_STATE)
	@echo "The run as a graph, a timeline and a history: ./$(BIN) ui --state $(DEMO_STATE)   (then open http://127.0.0.1:8470/)"

# Work on the lab's clusters (after make demo): a smoke test in every member propagated by
# Karmada, a CPU-bound Job per member handing its result to a local step (flows/jobs.hcl,
# docs/steps-on-kubernetes.md); demo-jobs-teardown deletes every Job it made.
JOBS_STATE := .flow/jobs.db
demo-jobs: build
	./$(BIN) run flows/jobs.hcl --state $(JOBS_STATE)

demo-jobs-teardown: build
	./$(BIN) destroy --auto-approve --state $(JOBS_STATE)

demo-resume: build
	./$(BIN) resume --state $(DEMO_STATE)

demo-teardown: build
	./$(BIN) destroy --state $(DEMO_STATE) --auto-approve

# The same lab over two LXD hosts (flows/k8s-lab/hosts.hcl): karmada-host, member1 and the
# registries on this machine's daemon (host a), member2 and member3 on host B, a second LXD
# daemon on 127.0.0.2:8443 that scripts/lab-host-b.sh starts and trusts through a trust
# token, as a second machine is added. The flow copies the member image to host B itself.
# `make demo-2host-teardown` leaves nothing of the lab on either host (host B's daemon runs
# on: scripts/lab-host-b.sh stop). It cannot run beside `make demo`: same names and ports.
DEMO2_STATE := .flow/k8s-lab-2host.db
DEMO2_VARS  := --var-file flows/k8s-lab/vars/two-hosts.hcl
demo-2host: build lab-setup
	HOSTB_IMAGES= bash scripts/lab-host-b.sh start
	./$(BIN) run flows/k8s-lab --new --state $(DEMO2_STATE) $(DEMO2_VARS)

demo-2host-resume: build
	./$(BIN) resume --state $(DEMO2_STATE)

demo-2host-teardown: build
	./$(BIN) destroy --state $(DEMO2_STATE) --auto-approve

# The doctor on the two-host lab: each cluster checked on its own host.
demo-2host-doctor: build
	./$(BIN) run flows/lab-doctor.hcl --new --state .flow/lab-doctor-2host.db $(DEMO2_VARS)

# The same lab on an LXD cluster (flows/k8s-lab/hosts.hcl, lxd_remote): the three members of
# scripts/lab-cluster.sh (c1, c2, c3 on 127.0.0.3, .4 and .5, one cluster, one remote),
# each cluster of the lab placed on a member by target, the registries by LXD's scheduler,
# every proxy device on the address of the member its instance runs on. The flow imports
# the lab's images into the cluster itself. `make demo-cluster-teardown` leaves nothing of
# the lab on any member (the cluster runs on: scripts/lab-cluster.sh stop). It cannot run
# beside `make demo`: the same instance names, and one kernel's cgroups.
DEMOC_STATE := .flow/k8s-lab-cluster.db
DEMOC_VARS  := --var-file flows/k8s-lab/vars/lxd-cluster.hcl
LAB_CLUSTER := LXD_CONF=/var/lib/flow-lab-cluster/client LAB_CLUSTER_IMAGES= bash scripts/lab-cluster.sh
demo-cluster: build lab-setup
	$(LAB_CLUSTER) start
	./$(BIN) run flows/k8s-lab --new --state $(DEMOC_STATE) $(DEMOC_VARS)

demo-cluster-resume: build
	./$(BIN) resume --state $(DEMOC_STATE)

demo-cluster-teardown: build
	./$(BIN) destroy --state $(DEMOC_STATE) --auto-approve

# The doctor on the cluster lab: each cluster checked through the cluster's remote, on
# its member's address.
demo-cluster-doctor: build
	./$(BIN) run flows/lab-doctor.hcl --new --state .flow/lab-doctor-cluster.db $(DEMOC_VARS)

# The seed's troubleshooting guide as a flow, on the running lab (flows/lab-doctor.hcl):
# one line per problem, per cluster, each with the command that repairs it; exits 1 unless
# every line is ok. Read-only.
demo-doctor: build
	./$(BIN) run flows/lab-doctor.hcl --new --state .flow/lab-doctor.db

# The seed's failover drill on the running lab (flows/failover-drill.hcl).
demo-drill: build
	./$(BIN) run flows/failover-drill.hcl --new --state .flow/failover-drill.db \
		--var-file flows/k8s-lab/vars/failover-drill.hcl --var karmadactl_path=$(HOME)/.cache/flow/bin/karmadactl-v1.13.0

# Karmada's own e2e suite (upstream's test/e2e/suites/base at the lab's version, built from
# the Go module proxy, unmodified) against the running lab (make demo): the lab's Karmada
# set as upstream's e2e deployment (flows/k8s-lab/vars/karmada-e2e.hcl), the images the
# suite names into the lab registry (flows/karmada-e2e.hcl), then every spec that fits a
# single-host lab; the report prints pass/fail/left out per file and why each left-out spec
# does not fit (flows/karmada-e2e/leave-out.txt). About an hour. `make karmada-e2e-ci`
# runs the subset make test runs (flows/karmada-e2e/ci.txt).
karmada-e2e: build
	./$(BIN) run flows/k8s-lab --var-file flows/k8s-lab/vars/karmada-e2e.hcl --state $(DEMO_STATE)
	./$(BIN) run flows/karmada-e2e.hcl --new --state .flow/karmada-e2e.db
	bash scripts/karmada-e2e.sh run full

karmada-e2e-ci: build
	./$(BIN) run flows/k8s-lab --var-file flows/k8s-lab/vars/karmada-e2e.hcl --state $(DEMO_STATE)
	./$(BIN) run flows/karmada-e2e.hcl --new --state .flow/karmada-e2e.db
	bash scripts/karmada-e2e.sh run ci

# The fast variant: busybox members serving a page, no Kubernetes (flows/local-lab.hcl).
BUSYBOX_STATE := .flow/local-lab.db
demo-busybox: build lab-setup
	./$(BIN) run flows/local-lab.hcl --new --state $(BUSYBOX_STATE)

demo-busybox-resume: build
	./$(BIN) resume --state $(BUSYBOX_STATE)

demo-busybox-teardown: build
	./$(BIN) destroy --state $(BUSYBOX_STATE) --auto-approve

# The Karmada local lab: the members run real API servers, the Karmada control plane runs
# as host processes, and the members are joined with the real karmadactl.
KARMADA_STATE := .flow/karmada-local-lab.db
k8s-bins:
	bash scripts/k8s-bins.sh

karmada-demo: build lab-setup k8s-bins
	./$(BIN) run flows/karmada-local-lab.hcl --new --state $(KARMADA_STATE)

karmada-demo-resume: build
	./$(BIN) resume --state $(KARMADA_STATE)

karmada-demo-teardown: build
	./$(BIN) destroy --state $(KARMADA_STATE) --auto-approve

fmt:
	gofmt -w $$(git ls-files '*.go')
	./$(BIN) fmt flows

clean:
	rm -rf bin .flow
