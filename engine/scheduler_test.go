package engine_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/flowdev/flow/engine"
	"github.com/flowdev/flow/engine/state"
)

// keysHCL renders n for_each keys k00, k01, ... as an HCL list.
func keysHCL(n int) string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("%q", fmt.Sprintf("k%02d", i))
	}
	return "[" + strings.Join(keys, ", ") + "]"
}

func TestParallelismBound(t *testing.T) {
	src := fmt.Sprintf(`
task "test_sleep" "s" {
  for_each = toset(%s)
  ms       = 40
  key      = each.key
}
`, keysHCL(30))
	h, o := runFlow(t, src, engine.Options{Parallelism: 4})
	if o.res.Status != state.Succeeded {
		t.Fatalf("status %s, want succeeded\n%s", o.res.Status, statuses(o.res.Records))
	}
	if got := len(h.rec.started()); got != 30 {
		t.Errorf("%d instances ran, want 30", got)
	}
	if got := h.rec.maxConcurrency(); got != 4 {
		t.Errorf("max concurrency %d, want exactly 4", got)
	}
	h.assertStored(o)
}

func TestPerInstanceEdges(t *testing.T) {
	src := `
task "test_sleep" "a" {
  for_each = { x = 50, y = 1500 }
  ms       = each.value
  key      = each.key
}

task "test_sleep" "b" {
  for_each = toset(["x", "y"])
  ms       = 1
  key      = test_sleep.a[each.key].value
}
`
	h := newHarness(t)
	p := h.plan(src)
	for addr, want := range map[string][]string{
		`test_sleep.b["x"]`: {`test_sleep.a["x"]`},
		`test_sleep.b["y"]`: {`test_sleep.a["y"]`},
	} {
		if got := p.Instances[addr].Deps; strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("%s depends on %v, want %v", addr, got, want)
		}
	}
	o := h.run(context.Background(), p, engine.Options{Parallelism: 4})
	if o.res.Status != state.Succeeded {
		t.Fatalf("status %s, want succeeded\n%s", o.res.Status, statuses(o.res.Records))
	}
	bx, ay := h.rec.seqOf("start", `test_sleep.b["x"]`), h.rec.seqOf("end", `test_sleep.a["y"]`)
	if bx == 0 || ay == 0 || bx > ay {
		t.Errorf(`b["x"] started at event %d, a["y"] ended at event %d: b["x"] must not wait for a["y"]`, bx, ay)
	}
	for key, want := range map[string]string{"x": "out-x", "y": "out-y"} {
		addr := fmt.Sprintf("test_sleep.b[%q]", key)
		if got, _ := h.rec.input(addr); got != want {
			t.Errorf("%s received key %q, want %q", addr, got, want)
		}
	}
	// Each b waits on its own a only.
	for _, key := range []string{"x", "y"} {
		addr := fmt.Sprintf("test_sleep.b[%q]", key)
		if s := h.rec.seqOf("start", addr); s < h.rec.seqOf("end", fmt.Sprintf("test_sleep.a[%q]", key)) {
			t.Errorf("%s started before its own dependency ended", addr)
		}
	}
}

func TestSkipOnFailure(t *testing.T) {
	src := `
task "test_fail" "a" {
  for_each   = toset(["bad", "ok"])
  fail_times = each.key == "bad" ? 100 : 0
}

task "test_sleep" "b" {
  for_each   = toset(["bad", "ok"])
  depends_on = [test_fail.a[each.key]]
  ms         = 1
  key        = each.key
}

task "test_sleep" "c" {
  for_each   = toset(["bad", "ok"])
  depends_on = [test_sleep.b[each.key]]
  ms         = 1
  key        = each.key
}
`
	h, o := runFlow(t, src, engine.Options{Parallelism: 4})
	recs := o.byAddr()
	tests := []struct {
		addr   string
		status state.Status
		reason string // substring of Error and Reason, for skipped ones
	}{
		{`test_fail.a["bad"]`, state.Failed, ""},
		{`test_fail.a["ok"]`, state.Succeeded, ""},
		{`test_sleep.b["bad"]`, state.Skipped, `dependency test_fail.a["bad"] failed`},
		{`test_sleep.b["ok"]`, state.Succeeded, ""},
		{`test_sleep.c["bad"]`, state.Skipped, `dependency test_sleep.b["bad"] was skipped (test_fail.a["bad"] failed)`},
		{`test_sleep.c["ok"]`, state.Succeeded, ""},
	}
	for _, tc := range tests {
		r := recs[tc.addr]
		if r == nil {
			t.Errorf("%s: no record", tc.addr)
			continue
		}
		if r.Status != tc.status {
			t.Errorf("%s: status %s, want %s", tc.addr, r.Status, tc.status)
		}
		if tc.reason != "" && (!strings.Contains(r.Reason, tc.reason) || !strings.Contains(r.Error, tc.reason)) {
			t.Errorf("%s: reason %q, error %q; want both to contain %q", tc.addr, r.Reason, r.Error, tc.reason)
		}
	}
	if !strings.Contains(recs[`test_fail.a["bad"]`].Error, "planned failure") {
		t.Errorf("failed record's error %q does not carry the task's error", recs[`test_fail.a["bad"]`].Error)
	}
	if o.res.Status != state.Failed {
		t.Errorf("status %s, want failed", o.res.Status)
	}
	if o.res.FirstFailure != `test_fail.a["bad"]` {
		t.Errorf("FirstFailure %q, want %q", o.res.FirstFailure, `test_fail.a["bad"]`)
	}
	for _, addr := range []string{`test_sleep.b["bad"]`, `test_sleep.c["bad"]`} {
		if n := h.rec.runsOf(addr); n != 0 {
			t.Errorf("%s ran %d times, want 0", addr, n)
		}
	}
	h.assertStored(o)
}

func TestFailFast(t *testing.T) {
	// test_fail.f sorts before test_sleep.s[...], so with parallelism 2 it starts
	// together with s["k00"] and fails at once, long before s["k00"] ends.
	src := `
task "test_fail" "f" {
  fail_times = 100
}

task "test_sleep" "s" {
  for_each = toset(["k00", "k01", "k02", "k03"])
  ms       = 400
  key      = each.key
}
`
	tests := []struct {
		name     string
		failFast bool
		ran      []string // sleep instances whose Run was called
	}{
		{"fail-fast", true, []string{`test_sleep.s["k00"]`}},
		{"continue", false, []string{`test_sleep.s["k00"]`, `test_sleep.s["k01"]`, `test_sleep.s["k02"]`, `test_sleep.s["k03"]`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h, o := runFlow(t, src, engine.Options{Parallelism: 2, FailFast: tc.failFast})
			if o.res.Status != state.Failed || o.res.FirstFailure != "test_fail.f" {
				t.Fatalf("status %s, first failure %q; want failed, test_fail.f\n%s", o.res.Status, o.res.FirstFailure, statuses(o.res.Records))
			}
			ran := map[string]bool{}
			for _, a := range h.rec.started() {
				ran[a] = true
			}
			for _, addr := range []string{`test_sleep.s["k00"]`, `test_sleep.s["k01"]`, `test_sleep.s["k02"]`, `test_sleep.s["k03"]`} {
				r := o.byAddr()[addr]
				want := false
				for _, a := range tc.ran {
					want = want || a == addr
				}
				if ran[addr] != want {
					t.Errorf("%s ran: %v, want %v", addr, ran[addr], want)
				}
				switch {
				case want && r.Status != state.Succeeded:
					t.Errorf("%s: status %s, want succeeded (running work finishes)", addr, r.Status)
				case !want && (r.Status != state.Skipped || !strings.Contains(r.Reason, "--fail-fast")):
					t.Errorf("%s: status %s, reason %q; want skipped naming --fail-fast", addr, r.Status, r.Reason)
				}
			}
			if tc.failFast {
				if want := "not started: --fail-fast after test_fail.f failed"; o.byAddr()[`test_sleep.s["k01"]`].Reason != want {
					t.Errorf("reason %q, want %q", o.byAddr()[`test_sleep.s["k01"]`].Reason, want)
				}
			}
			h.assertStored(o)
		})
	}
}

func TestRetries(t *testing.T) {
	tests := []struct {
		attempts int
		status   state.Status
	}{
		{3, state.Succeeded},
		{2, state.Failed},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("attempts=%d", tc.attempts), func(t *testing.T) {
			src := fmt.Sprintf(`
task "test_fail" "f" {
  fail_times = 2
  retry {
    attempts = %d
    delay    = "10ms"
  }
}
`, tc.attempts)
			h, o := runFlow(t, src, engine.Options{})
			r := o.byAddr()["test_fail.f"]
			if r.Status != tc.status || r.Attempts != tc.attempts {
				t.Errorf("status %s after %d attempts, want %s after %d", r.Status, r.Attempts, tc.status, tc.attempts)
			}
			if n := h.rec.runsOf("test_fail.f"); n != tc.attempts {
				t.Errorf("Run called %d times, want %d", n, tc.attempts)
			}
			// Every attempt before the latest is kept, in order, with its times and error.
			if len(r.Tries) != tc.attempts-1 {
				t.Fatalf("%d earlier attempts recorded, want %d: %+v", len(r.Tries), tc.attempts-1, r.Tries)
			}
			for i, try := range r.Tries {
				if !strings.Contains(try.Error, fmt.Sprintf("planned failure %d of 2", i+1)) || try.FinishedAt.Before(try.StartedAt) ||
					r.StartedAt == nil || r.StartedAt.Before(try.FinishedAt) || (i > 0 && try.StartedAt.Before(r.Tries[i-1].FinishedAt)) {
					t.Errorf("attempt %d recorded as %+v (latest started %v)", i+1, try, r.StartedAt)
				}
			}
			if tc.status == state.Failed && !strings.Contains(r.Error, "planned failure 2 of 2") {
				t.Errorf("error %q, want the last attempt's error", r.Error)
			}
			if tc.status == state.Succeeded && r.Error != "" {
				t.Errorf("error %q kept after success", r.Error)
			}
			if !strings.Contains(o.out, "retrying in") {
				t.Errorf("output does not report the retry:\n%s", o.out)
			}
			h.assertStored(o)
		})
	}
}

func TestTimeout(t *testing.T) {
	tests := []struct {
		name  string
		retry string
		want  int
	}{
		{"once", "", 1},
		{"retried", `retry {
    attempts = 2
    delay    = "10ms"
  }`, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src := fmt.Sprintf(`
task "test_block" "b" {
  timeout = "100ms"
  %s
}
`, tc.retry)
			h, o := runFlow(t, src, engine.Options{})
			r := o.byAddr()["test_block.b"]
			if r.Status != state.Failed || !strings.Contains(r.Error, "timed out after 100ms") {
				t.Errorf("status %s, error %q; want failed, timed out after 100ms", r.Status, r.Error)
			}
			if r.Attempts != tc.want || h.rec.runsOf("test_block.b") != tc.want {
				t.Errorf("%d attempts recorded, Run called %d times; want %d", r.Attempts, h.rec.runsOf("test_block.b"), tc.want)
			}
			if o.res.Status != state.Failed {
				t.Errorf("status %s, want failed (a timeout is not an interruption)", o.res.Status)
			}
			h.assertStored(o)
		})
	}
}

func TestPanic(t *testing.T) {
	src := `
task "test_panic" "p" {}

task "test_sleep" "s" {
  ms  = 5
  key = "s"
}

task "test_sleep" "after" {
  depends_on = [test_panic.p]
  ms         = 1
}
`
	h, o := runFlow(t, src, engine.Options{})
	recs := o.byAddr()
	if r := recs["test_panic.p"]; r.Status != state.Failed || !strings.Contains(r.Error, "panicked") {
		t.Errorf("test_panic.p: status %s, error %q; want failed, panicked", r.Status, r.Error)
	}
	if r := recs["test_sleep.s"]; r.Status != state.Succeeded {
		t.Errorf("test_sleep.s: status %s, want succeeded", r.Status)
	}
	if r := recs["test_sleep.after"]; r.Status != state.Skipped {
		t.Errorf("test_sleep.after: status %s, want skipped", r.Status)
	}
	if o.res.Status != state.Failed || o.res.FirstFailure != "test_panic.p" {
		t.Errorf("status %s, first failure %q", o.res.Status, o.res.FirstFailure)
	}
	if h.rec.running() != 0 {
		t.Errorf("%d tasks still counted as running", h.rec.running())
	}
	h.assertStored(o)
}

func TestCancellation(t *testing.T) {
	src := `
task "test_block" "b" {
  for_each = toset(["k00", "k01", "k02", "k03"])
}
`
	h := newHarness(t)
	p := h.plan(src)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		defer cancel()
		if !h.rec.waitFor(10*time.Second, func() bool { return h.rec.running() == 2 }) {
			t.Errorf("the first two instances never ran together")
		}
	}()
	o := h.run(ctx, p, engine.Options{Parallelism: 2})
	if o.res.Status != state.Interrupted {
		t.Errorf("status %s, want interrupted", o.res.Status)
	}
	want := map[string]state.Status{
		`test_block.b["k00"]`: state.Interrupted,
		`test_block.b["k01"]`: state.Interrupted,
		`test_block.b["k02"]`: state.Pending,
		`test_block.b["k03"]`: state.Pending,
	}
	stored := h.stored(o.runID)
	for addr, st := range want {
		if r := o.byAddr()[addr]; r == nil || r.Status != st {
			t.Errorf("%s: result record %+v, want status %s", addr, r, st)
		}
		if r := stored[addr]; r == nil || r.Status != st {
			t.Errorf("%s: stored record %+v, want status %s", addr, r, st)
		}
	}
	if got := h.rec.started(); len(got) != 2 {
		t.Errorf("started %v, want only the first two", got)
	}
	if o.res.FirstFailure != "" {
		t.Errorf("FirstFailure %q after an interruption, want none", o.res.FirstFailure)
	}
	h.assertStored(o)
}

// durableFlow is a -> b per key, then c after all of b: the shape the durability tests
// check, where each dependent must find its dependencies' successes committed.
const durableFlow = `
task "test_sleep" "a" {
  for_each = toset(["x", "y", "z"])
  ms       = 5
  key      = each.key
}

task "test_sleep" "b" {
  for_each = toset(["x", "y", "z"])
  ms       = 5
  key      = test_sleep.a[each.key].value
}

task "test_sleep" "c" {
  depends_on = [test_sleep.b]
  ms         = 1
}
`

func TestDurableBeforeDependentsStart(t *testing.T) {
	src := durableFlow
	h := newHarness(t)
	p := h.plan(src)
	o := h.run(context.Background(), p, engine.Options{Parallelism: 4, Store: &spyStore{inner: h.store, rec: h.rec}})
	if o.res.Status != state.Succeeded {
		t.Fatalf("status %s\n%s", o.res.Status, statuses(o.res.Records))
	}
	checked := 0
	for _, addr := range p.Order {
		start := h.rec.seqOf("start", addr)
		if start == 0 {
			t.Errorf("%s never started", addr)
			continue
		}
		for _, dep := range p.Instances[addr].Deps {
			commit := h.rec.commitSeq(dep)
			if commit == 0 {
				t.Errorf("%s: dependency %s was never committed as succeeded", addr, dep)
			} else if start < commit {
				t.Errorf("%s started (event %d) before the commit of %s's success (event %d)", addr, start, dep, commit)
			}
			checked++
		}
	}
	if checked != 6 {
		t.Errorf("checked %d edges, want 6", checked)
	}
	h.assertStored(o)
}

// runWithin runs p in the background and fails the test if it has not returned
// after limit (the runner is then left behind; the test binary exits anyway).
func runWithin(t *testing.T, h *harness, ctx context.Context, p *engine.Plan, opts engine.Options, limit time.Duration) outcome {
	t.Helper()
	done := make(chan outcome, 1)
	go func() { done <- h.run(ctx, p, opts) }()
	select {
	case o := <-done:
		return o
	case <-time.After(limit):
		t.Fatalf("run did not return within %s", limit)
		return outcome{}
	}
}

// A failure under --fail-fast while another instance waits to retry must end the
// run: the waiting instance gets no further attempt and stays failed.
func TestFailFastDuringRetryBackoff(t *testing.T) {
	src := `
task "test_fail" "r" {
  fail_times = 1
  retry {
    attempts = 2
    delay    = "400ms"
  }
}

task "test_sleep" "s" {
  ms = 20
}

task "test_fail" "f" {
  fail_times = 100
  depends_on = [test_sleep.s]
}

task "test_sleep" "after_r" {
  depends_on = [test_fail.r]
  ms         = 1
}
`
	h := newHarness(t)
	o := runWithin(t, h, context.Background(), h.plan(src), engine.Options{FailFast: true}, 10*time.Second)
	recs := o.byAddr()
	if o.res.Status != state.Failed || o.res.FirstFailure != "test_fail.f" {
		t.Errorf("status %s, first failure %q; want failed, test_fail.f\n%s", o.res.Status, o.res.FirstFailure, statuses(o.res.Records))
	}
	if r := recs["test_fail.r"]; r.Status != state.Failed || r.Attempts != 1 || !strings.Contains(r.Error, "planned failure 1 of 1") {
		t.Errorf("test_fail.r: status %s after %d attempts, error %q; want failed after 1 with its error", r.Status, r.Attempts, r.Error)
	}
	if n := h.rec.runsOf("test_fail.r"); n != 1 {
		t.Errorf("test_fail.r ran %d times, want 1", n)
	}
	if r := recs["test_sleep.after_r"]; r.Status != state.Skipped {
		t.Errorf("test_sleep.after_r: status %s, want skipped", r.Status)
	}
	h.assertStored(o)
}

// Cancelling while an instance waits to retry interrupts it at once instead of
// waiting for its backoff.
func TestCancelDuringRetryBackoff(t *testing.T) {
	src := `
task "test_fail" "r" {
  fail_times = 1
  retry {
    attempts = 2
    delay    = "20s"
  }
}
`
	h := newHarness(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := &syncBuffer{}
	go func() {
		defer cancel()
		if !waitOutput(out, "retrying in", 10*time.Second) {
			t.Errorf("the first attempt never failed:\n%s", out.String())
		}
	}()
	// The backoff is at least 10s, so returning within 8s means it was not waited for.
	o := runWithin(t, h, ctx, h.plan(src), engine.Options{Out: out}, 8*time.Second)
	if o.res.Status != state.Interrupted {
		t.Errorf("status %s, want interrupted", o.res.Status)
	}
	if r := o.byAddr()["test_fail.r"]; r.Status != state.Interrupted || r.Attempts != 1 {
		t.Errorf("test_fail.r: status %s after %d attempts; want interrupted after 1", r.Status, r.Attempts)
	}
	h.assertStored(o)
}

func TestProgressLines(t *testing.T) {
	src := `
task "test_sleep" "slow" {
  ms = 300
}
`
	_, o := runFlow(t, src, engine.Options{ProgressEvery: 20 * time.Millisecond})
	if !strings.Contains(o.out, "test_sleep.slow: still running") {
		t.Errorf("no progress line in:\n%s", o.out)
	}
	for _, want := range []string{"test_sleep.slow: started", "test_sleep.slow: succeeded in"} {
		if !strings.Contains(o.out, want) {
			t.Errorf("output lacks %q:\n%s", want, o.out)
		}
	}
}

// TestEmptyForEach: a for_each over an empty set has no instances, and a task reading
// all of them sees an empty object, not an unknown value.
func TestEmptyForEach(t *testing.T) {
	_, o := runFlow(t, `
task "test_echo" "none" {
  for_each = toset([])
  value    = each.key
}
task "test_echo" "count" {
  value = "n=${length(test_echo.none)}"
}
`, engine.Options{})
	if o.res.Status != state.Succeeded {
		t.Fatalf("status %s: %+v", o.res.Status, o.res.Records)
	}
	if !strings.Contains(o.out, "n=0") {
		t.Errorf("output lacks n=0:\n%s", o.out)
	}
}

// TestMaxParallel: a task's max_parallel bounds its own instances, not the run's other
// tasks, and its waiting instances hold no slot: with 2 slots and one task at
// max_parallel 1, the other task's instances run beside it.
func TestMaxParallel(t *testing.T) {
	tests := []struct {
		name        string
		src         string
		parallelism int
		want        int
	}{
		{"bound below parallelism", fmt.Sprintf(`
task "test_sleep" "s" {
  for_each     = toset(%s)
  ms           = 30
  key          = each.key
  max_parallel = 2
}
`, keysHCL(8)), 10, 2},
		{"held instances hold no slot", fmt.Sprintf(`
task "test_sleep" "a" {
  for_each     = toset(%s)
  ms           = 60
  key          = each.key
  max_parallel = 1
}
task "test_sleep" "b" {
  for_each = toset(%s)
  ms       = 60
  key      = each.key
}
`, keysHCL(4), keysHCL(4)), 2, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, o := runFlow(t, tt.src, engine.Options{Parallelism: tt.parallelism})
			if o.res.Status != state.Succeeded {
				t.Fatalf("status %s, want succeeded\n%s", o.res.Status, statuses(o.res.Records))
			}
			if got := h.rec.maxConcurrency(); got != tt.want {
				t.Errorf("max concurrency %d, want exactly %d", got, tt.want)
			}
			h.assertStored(o)
		})
	}
}

// TestProgressLinesGrow: an instance's "still running" lines come at doubling
// intervals, each with its last output line.
func TestProgressLinesGrow(t *testing.T) {
	src := `
task "test_sleep" "slow" {
  ms = 700
}
`
	_, o := runFlow(t, src, engine.Options{ProgressEvery: 20 * time.Millisecond})
	// Ticks every 20 ms over 700 ms: at 20, 40, 80, 160, 320 and 640 ms at most, not 35.
	if n := strings.Count(o.out, "test_sleep.slow: still running"); n < 3 || n > 7 {
		t.Errorf("%d progress lines, want between 3 and 7 (doubling intervals):\n%s", n, o.out)
	}
}
