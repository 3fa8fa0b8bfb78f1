package engine_test

import (
	"context"
	"slices"
	"testing"

	"github.com/flowdev/flow/engine"
)

// TestRecordsDeps: every instance's record names the instances it waited for in that
// run (what flow ui draws a past run's graph from), an up-to-date instance's too when
// the flow's graph around it changed since it ran.
func TestRecordsDeps(t *testing.T) {
	const before = `
task "test_sleep" "a" {
  ms = 1
}

task "test_sleep" "b" {
  ms = 1
}
`
	const after = `
task "test_sleep" "a" {
  ms = 1
}

task "test_sleep" "b" {
  depends_on = [test_sleep.a]
  ms         = 1
}

task "test_sleep" "c" {
  for_each = toset(["x", "y"])
  depends_on = [test_sleep.b]
  ms         = 1
}
`
	h := newHarness(t)
	ctx := context.Background()
	first := h.run(ctx, h.plan(before), engine.Options{})
	second := h.run(ctx, h.plan(after), engine.Options{RunID: first.runID, Previous: h.previous(first.runID)})
	if second.res.UpToDate != 2 {
		t.Fatalf("%d up to date, want a and b (depends_on changes no input)\n%s", second.res.UpToDate, statuses(second.res.Records))
	}
	for _, tt := range []struct {
		addr string
		want []string
	}{
		{"test_sleep.a", nil},
		{"test_sleep.b", []string{"test_sleep.a"}},
		{`test_sleep.c["x"]`, []string{"test_sleep.b"}},
	} {
		rec := h.stored(second.runID)[tt.addr]
		if rec == nil || !rec.DepsKnown || !slices.Equal(rec.Deps, tt.want) {
			t.Errorf("%s's record: deps %v (known: %v), want %v", tt.addr, rec.Deps, rec.DepsKnown, tt.want)
		}
	}
}
