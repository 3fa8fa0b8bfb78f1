package engine_test

// Benchmarks of the engine's own overhead: planning and running many task instances
// (no-op ones, and exec tasks running `true`). They measure and never assert on speed; scripts/bench.sh compares
// the built binary with make and go-task, and docs/performance.md records both.
//
//	go test -run '^$' -bench . -benchmem -benchtime 3x ./engine/
//
// Every name here starts with bench so it cannot collide with the helpers of other
// _test.go files of package engine_test.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/zclconf/go-cty/cty"

	"github.com/flowdev/flow/engine"
	"github.com/flowdev/flow/engine/config"
	"github.com/flowdev/flow/engine/state"
	"github.com/flowdev/flow/tasks"
	"github.com/flowdev/flow/tasks/exec"
)

// benchNoop is the test-only task type bench_noop: Run returns at once, publishing
// its input as output "out", so a second task can read it per instance.
type benchNoop struct {
	Value string `hcl:"value,optional"`
}

func (*benchNoop) Validate() error { return nil }

func (t *benchNoop) Run(context.Context, *tasks.Env) (tasks.Outputs, error) {
	return tasks.Outputs{"out": cty.StringVal(t.Value)}, nil
}

func benchRegistry(b *testing.B) *tasks.Registry {
	b.Helper()
	reg := tasks.NewRegistry()
	if err := exec.Register(reg); err != nil {
		b.Fatal(err)
	}
	if err := reg.Register(tasks.Type{
		Name: "bench_noop", Summary: "does nothing (benchmarks only)",
		New:     func() tasks.Task { return &benchNoop{} },
		Outputs: []tasks.Output{{Name: "out", Type: cty.String}},
	}); err != nil {
		b.Fatal(err)
	}
	return reg
}

// benchKeys is an HCL expression for n keys "00000", "00001", ... as a for_each
// value. range() yields at most 1024 values, so keys are built in blocks of 1000.
// The default form is an object ({for k in ... : k => k}); with toset set it is
// toset([...]), what a user would likely write, measured apart because go-cty's
// conversion of a long tuple to a set compares every pair of element types unless
// config's toset fast path applies (docs/performance.md).
func benchKeys(n int, toset bool) string {
	list := fmt.Sprintf(`[for i in range(%d) : format("%%05d", i)]`, n)
	if n > 1000 {
		if n%1000 != 0 {
			panic("benchKeys: n above 1000 must be a multiple of 1000")
		}
		list = fmt.Sprintf(`flatten([for a in range(%d) : [for b in range(1000) : format("%%05d", a * 1000 + b)]])`, n/1000)
	}
	if toset {
		return "toset(" + list + ")"
	}
	return "{ for k in " + list + " : k => k }"
}

// benchFlow writes a flow into a temporary directory and returns its path. With
// chained set it has two tasks of n/2 instances each, the second reading the first
// per instance (bench_noop.b["k"] waits on bench_noop.a["k"] only); otherwise one
// task of n independent instances.
func benchFlow(b *testing.B, n int, chained, toset bool) string {
	b.Helper()
	var src string
	if chained {
		src = fmt.Sprintf(`locals {
  keys = %s
}

task "bench_noop" "a" {
  for_each = local.keys
  value    = each.key
}

task "bench_noop" "b" {
  for_each = local.keys
  value    = "after ${bench_noop.a[each.key].out}"
}
`, benchKeys(n/2, toset))
	} else {
		src = fmt.Sprintf(`task "bench_noop" "a" {
  for_each = %s
  value    = each.key
}
`, benchKeys(n, toset))
	}
	path := filepath.Join(b.TempDir(), "bench.hcl")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		b.Fatal(err)
	}
	return path
}

// benchPlan loads, assigns, scopes and plans the flow at path, as `flow run` does.
func benchPlan(b *testing.B, path string, reg *tasks.Registry) *engine.Plan {
	l, _, diags := engine.Load(path, reg, config.VarInputs{})
	if diags.HasErrors() {
		b.Fatal(diags)
	}
	return l.Plan
}

// benchMemStore is a Checkpointer that keeps nothing: BenchmarkRunNoStore subtracts
// the state file from BenchmarkRun to show what the scheduler alone costs.
type benchMemStore struct{}

func (benchMemStore) Commit(uint64, *state.Run, []*state.Instance, map[string][]byte) error {
	return nil
}

// benchRun runs plan once per iteration; open, when not nil, gives each iteration a
// fresh Checkpointer and run id (not timed) and a function to close it (timed: a
// real run closes its state file too).
func benchRun(b *testing.B, plan *engine.Plan, open func(b *testing.B) (engine.Checkpointer, uint64, func())) {
	n := len(plan.Order)
	iters := 0
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		b.StopTimer()
		store, runID, closeStore := open(b)
		b.StartTimer()
		res, err := engine.NewRunner(plan, engine.Options{Parallelism: 8, RunID: runID, Store: store}).Run(context.Background())
		closeStore()
		if err != nil {
			b.Fatal(err)
		}
		if res.Status != state.Succeeded || len(res.Records) != n {
			b.Fatalf("run ended %s with %d records, want succeeded with %d", res.Status, len(res.Records), n)
		}
		iters++
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(iters*n), "ns/instance")
}

// benchStore opens a fresh state file in b.TempDir() with one run in it.
func benchStore(b *testing.B) (engine.Checkpointer, uint64, func()) {
	s, err := state.Open(filepath.Join(b.TempDir(), "state.db"), state.Options{})
	if err != nil {
		b.Fatal(err)
	}
	run := &state.Run{Flow: "bench.hcl", Status: state.Running, StartedAt: time.Now().UTC()}
	if err := s.CreateRun(run); err != nil {
		b.Fatal(err)
	}
	return s, run.ID, func() {
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRun runs n independent no-op instances at parallelism 8 with a real
// state file (a fresh one per iteration), so ns/instance is the engine's whole
// per-instance overhead: scheduling, evaluation, fingerprints and checkpoints.
func BenchmarkRun(b *testing.B) {
	reg := benchRegistry(b)
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			benchRun(b, benchPlan(b, benchFlow(b, n, false, false), reg), benchStore)
		})
	}
}

// BenchmarkRunNoStore is BenchmarkRun with a Checkpointer that writes nothing: the
// difference between the two is what the state file costs.
func BenchmarkRunNoStore(b *testing.B) {
	reg := benchRegistry(b)
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			benchRun(b, benchPlan(b, benchFlow(b, n, false, false), reg), func(*testing.B) (engine.Checkpointer, uint64, func()) {
				return benchMemStore{}, 1, func() {}
			})
		})
	}
}

// BenchmarkRunExecTrue is workload W2 of scripts/bench.sh in process: 2,000
// independent exec tasks running `true` at parallelism 8 with a real state file, so
// `go test -cpuprofile` shows where flow's own CPU goes next to the processes it
// starts (docs/performance.md). With FLOW_BENCH_LARGE set it also runs W3's 20,000.
func BenchmarkRunExecTrue(b *testing.B) {
	sizes := []int{2000}
	if os.Getenv("FLOW_BENCH_LARGE") != "" {
		sizes = append(sizes, 20000) // W3; about 30 s an iteration on 2 cores
	}
	reg := benchRegistry(b)
	for _, n := range sizes {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "true.hcl")
			src := fmt.Sprintf("task \"exec\" \"t\" {\n  for_each = %s\n  command  = [\"true\"]\n}\n", benchKeys(n, false))
			if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
				b.Fatal(err)
			}
			benchRun(b, benchPlan(b, path, reg), benchStore)
		})
	}
}

// BenchmarkRunExecUndo is BenchmarkRunExecTrue with an undo on every task: each
// attempt's record, with the object it is about to make, is durable before it acts
// (docs/checkpoints.md), which the tasks without one skip; the difference is that cost.
func BenchmarkRunExecUndo(b *testing.B) {
	reg := benchRegistry(b)
	path := filepath.Join(b.TempDir(), "undo.hcl")
	src := fmt.Sprintf("task \"exec\" \"t\" {\n  for_each = %s\n  command  = [\"true\"]\n  undo     = \"true\"\n}\n", benchKeys(2000, false))
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		b.Fatal(err)
	}
	b.Run("2000", func(b *testing.B) { benchRun(b, benchPlan(b, path, reg), benchStore) })
}

// BenchmarkPlan10000 loads and plans a flow of 10,000 instances: 5,000 of task a
// and 5,000 of task b, each b instance reading its own a instance (5,000
// per-instance edges), as `flow run` and `flow plan` do before anything runs.
// Sub-benchmark object builds the keys with a for expression into an object;
// toset builds them with toset([...]) (see benchKeys).
func BenchmarkPlan10000(b *testing.B) {
	reg := benchRegistry(b)
	for _, form := range []string{"object", "toset"} {
		b.Run(form, func(b *testing.B) {
			path := benchFlow(b, 10000, true, form == "toset")
			b.ReportAllocs()
			iters := 0
			for b.Loop() {
				plan := benchPlan(b, path, reg)
				if len(plan.Order) != 10000 {
					b.Fatalf("planned %d instances, want 10000", len(plan.Order))
				}
				iters++
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(iters*10000), "ns/instance")
		})
	}
}
