package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/flowdev/flow/engine"
	"github.com/flowdev/flow/engine/state"
)

// chainFlow is two keyed instances, each b reading its own a's output. yMS is
// a["y"]'s ms, the attribute the resume tests change.
func chainFlow(yMS int) string {
	return fmt.Sprintf(`
task "test_sleep" "a" {
  for_each = { x = 20, y = %d }
  ms       = each.value
  key      = each.key
}

task "test_sleep" "b" {
  for_each = toset(["x", "y"])
  ms       = 1
  key      = test_sleep.a[each.key].value
}

output "bx" {
  value = test_sleep.b["x"].value
}
`, yMS)
}

const failedFlow = `
task "test_fail" "f" {
  fail_times = 1
}

task "test_sleep" "g" {
  depends_on = [test_fail.f]
  ms         = 1
}

task "test_sleep" "h" {
  ms = 1
}
`

func TestResume(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	first := h.run(ctx, h.plan(chainFlow(20)), engine.Options{})
	if first.res.Status != state.Succeeded {
		t.Fatalf("first run: status %s\n%s", first.res.Status, statuses(first.res.Records))
	}
	if got := first.res.Outputs["bx"]; !got.RawEquals(cty.StringVal("out-out-x")) {
		t.Errorf("first run: output bx = %#v", got)
	}

	t.Run("unchanged", func(t *testing.T) {
		h.rec.reset()
		o := h.run(ctx, h.plan(chainFlow(20)), engine.Options{RunID: first.runID, Previous: h.previous(first.runID)})
		if o.res.Status != state.Succeeded || o.res.UpToDate != 4 {
			t.Errorf("status %s, %d up to date; want succeeded, 4\n%s", o.res.Status, o.res.UpToDate, statuses(o.res.Records))
		}
		if ran := h.rec.started(); len(ran) != 0 {
			t.Errorf("tasks ran again: %v", ran)
		}
		for _, r := range o.res.Records {
			if r.Status != state.Succeeded || r.Reason != "up to date: succeeded before with the same inputs" {
				t.Errorf("%s: status %s, reason %q", r.Address, r.Status, r.Reason)
			}
		}
		// Restored outputs feed the dependents' evaluation and the flow's outputs.
		if got := o.res.Outputs["bx"]; !got.RawEquals(cty.StringVal("out-out-x")) {
			t.Errorf("output bx = %#v after resume, want out-out-x", got)
		}
		h.assertStored(o)
	})

	t.Run("changed attribute", func(t *testing.T) {
		h.rec.reset()
		o := h.run(ctx, h.plan(chainFlow(30)), engine.Options{RunID: first.runID, Previous: h.previous(first.runID)})
		if o.res.Status != state.Succeeded || o.res.UpToDate != 3 {
			t.Errorf("status %s, %d up to date; want succeeded, 3\n%s", o.res.Status, o.res.UpToDate, statuses(o.res.Records))
		}
		if ran := h.rec.started(); strings.Join(ran, " ") != `test_sleep.a["y"]` {
			t.Errorf("ran %v, want only test_sleep.a[\"y\"] (b[\"y\"] reads an output that did not change)", ran)
		}
		ay := o.byAddr()[`test_sleep.a["y"]`]
		if want := "inputs changed since it succeeded (ms)"; !strings.Contains(ay.Reason, want) {
			t.Errorf(`a["y"] reason %q, want it to contain %q`, ay.Reason, want)
		}
		if !strings.Contains(o.out, `test_sleep.a["y"]: inputs changed since it succeeded (ms); running it`) {
			t.Errorf("output does not say why a[\"y\"] runs again:\n%s", o.out)
		}
		if by := o.byAddr()[`test_sleep.b["y"]`]; !strings.HasPrefix(by.Reason, "up to date") {
			t.Errorf(`b["y"] reason %q, want up to date`, by.Reason)
		}
		h.assertStored(o)
	})

	t.Run("failed before", func(t *testing.T) {
		h := newHarness(t)
		p := h.plan(failedFlow)
		first := h.run(ctx, p, engine.Options{})
		if first.res.Status != state.Failed {
			t.Fatalf("first run: status %s, want failed", first.res.Status)
		}
		h.rec.reset()
		o := h.run(ctx, h.plan(failedFlow), engine.Options{RunID: first.runID, Previous: h.previous(first.runID)})
		if o.res.Status != state.Succeeded || o.res.UpToDate != 1 {
			t.Errorf("status %s, %d up to date; want succeeded, 1\n%s", o.res.Status, o.res.UpToDate, statuses(o.res.Records))
		}
		if ran := h.rec.started(); strings.Join(ran, " ") != "test_fail.f test_sleep.g" {
			t.Errorf("ran %v, want the failed instance and its skipped dependent", ran)
		}
		for _, r := range o.res.Records {
			if r.Status != state.Succeeded {
				t.Errorf("%s: status %s, want succeeded", r.Address, r.Status)
			}
		}
	})
}

func TestPreview(t *testing.T) {
	ctx := context.Background()
	chain := newHarness(t)
	chainRun := chain.run(ctx, chain.plan(chainFlow(20)), engine.Options{})
	failed := newHarness(t)
	failedRun := failed.run(ctx, failed.plan(failedFlow), engine.Options{})

	tests := []struct {
		name     string
		h        *harness
		src      string
		previous map[string]*state.Instance
		want     []engine.Decision
	}{
		{"new run", chain, chainFlow(20), nil, []engine.Decision{
			{Addr: `test_sleep.a["x"]`, Action: engine.ActionRun, Reason: "not run before"},
			{Addr: `test_sleep.a["y"]`, Action: engine.ActionRun, Reason: "not run before"},
			{Addr: `test_sleep.b["x"]`, Action: engine.ActionRun, Reason: "not run before"},
			{Addr: `test_sleep.b["y"]`, Action: engine.ActionRun, Reason: "not run before"},
		}},
		{"unchanged", chain, chainFlow(20), chain.previous(chainRun.runID), []engine.Decision{
			{Addr: `test_sleep.a["x"]`, Action: engine.ActionSkip, Reason: "succeeded before with the same inputs"},
			{Addr: `test_sleep.a["y"]`, Action: engine.ActionSkip, Reason: "succeeded before with the same inputs"},
			{Addr: `test_sleep.b["x"]`, Action: engine.ActionSkip, Reason: "succeeded before with the same inputs"},
			{Addr: `test_sleep.b["y"]`, Action: engine.ActionSkip, Reason: "succeeded before with the same inputs"},
		}},
		{"changed attribute", chain, chainFlow(30), chain.previous(chainRun.runID), []engine.Decision{
			{Addr: `test_sleep.a["x"]`, Action: engine.ActionSkip, Reason: "succeeded before with the same inputs"},
			{Addr: `test_sleep.a["y"]`, Action: engine.ActionRun, Reason: "inputs changed since it succeeded (ms)"},
			{Addr: `test_sleep.b["x"]`, Action: engine.ActionSkip, Reason: "succeeded before with the same inputs"},
			{Addr: `test_sleep.b["y"]`, Action: engine.ActionMaybe, Reason: `succeeded before; waits for test_sleep.a["y"], which runs`},
		}},
		{"failed before", failed, failedFlow, failed.previous(failedRun.runID), []engine.Decision{
			{Addr: "test_fail.f", Action: engine.ActionRun, Reason: "previous attempt failed"},
			{Addr: "test_sleep.g", Action: engine.ActionRun, Reason: "previous attempt skipped"},
			{Addr: "test_sleep.h", Action: engine.ActionSkip, Reason: "succeeded before with the same inputs"},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := engine.Decisions(tc.h.plan(tc.src), tc.previous, nil)
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("preview:\n got %v\nwant %v", got, tc.want)
			}
		})
	}
}

func TestSecrets(t *testing.T) {
	const secret = "s3cr3t-value"
	src := `
variable "token" {
  type      = string
  sensitive = true
}

task "test_echo" "a" {
  value = "token is ${var.token}"
}

task "test_echo" "b" {
  value = test_echo.a.value
}

task "test_echo" "plain" {
  value = "nothing to hide"
}
`
	h := newHarness(t)
	o := h.run(context.Background(), h.plan(src, "token="+secret), engine.Options{})
	if o.res.Status != state.Succeeded {
		t.Fatalf("status %s\n%s", o.res.Status, statuses(o.res.Records))
	}
	// At run time tasks see the real value, also through a dependency.
	for _, addr := range []string{"test_echo.a", "test_echo.b"} {
		if got, _ := h.rec.input(addr); got != "token is "+secret {
			t.Errorf("%s received %q, want the real value", addr, got)
		}
	}
	if strings.Contains(o.out, secret) {
		t.Errorf("output leaks the secret:\n%s", o.out)
	}
	if !strings.Contains(o.out, "[test_echo.a] token is (sensitive)") {
		t.Errorf("output does not show the redacted line:\n%s", o.out)
	}
	for _, addr := range []string{"test_echo.a", "test_echo.b"} {
		log, err := h.store.Logs(o.runID, addr)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(log), secret) || !strings.Contains(string(log), "(sensitive)") {
			t.Errorf("%s: stored log %q, want it redacted", addr, log)
		}
	}
	stored := h.stored(o.runID)
	for _, addr := range []string{"test_echo.a", "test_echo.b"} {
		r := stored[addr]
		if !r.Redacted || len(r.Outputs) != 0 {
			t.Errorf("%s: stored Redacted=%v, outputs %v; want redacted without outputs", addr, r.Redacted, r.Outputs)
		}
	}
	if r := stored["test_echo.plain"]; r.Redacted || len(r.Outputs) != 1 {
		t.Errorf("test_echo.plain: stored Redacted=%v, outputs %v; want its output kept", r.Redacted, r.Outputs)
	}
	js, err := json.Marshal(stored)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(js), secret) {
		t.Errorf("stored records leak the secret: %s", js)
	}

	// A resume cannot restore what was never stored: the redacted instances run again.
	h.rec.reset()
	again := h.run(context.Background(), h.plan(src, "token="+secret), engine.Options{RunID: o.runID, Previous: h.previous(o.runID)})
	if again.res.UpToDate != 1 || strings.Join(h.rec.started(), " ") != "test_echo.a test_echo.b" {
		t.Errorf("resume: %d up to date, ran %v; want plain up to date, a and b run again", again.res.UpToDate, h.rec.started())
	}
	if r := again.byAddr()["test_echo.a"]; !strings.Contains(r.Reason, "held a secret") {
		t.Errorf("resume: test_echo.a reason %q", r.Reason)
	}
	if strings.Contains(again.out, secret) {
		t.Errorf("resume output leaks the secret:\n%s", again.out)
	}
}

func TestPlanGraph(t *testing.T) {
	src := `
task "test_sleep" "a" {
  for_each = toset(["x", "y"])
  ms       = 1
  key      = each.key
}

task "test_sleep" "b" {
  for_each = toset(["x", "y"])
  ms       = 1
  key      = test_sleep.a[each.key].value
}

task "test_echo" "c" {
  value      = "done"
  depends_on = [test_sleep.b]
}

task "test_echo" "d" {
  value = test_sleep.b["y"].value
}
`
	h := newHarness(t)
	p := h.plan(src)
	want := `test_echo.c
  test_sleep.b["x"]
  test_sleep.b["y"]
test_echo.d
  test_sleep.b["y"]
test_sleep.a["x"]
test_sleep.a["y"]
test_sleep.b["x"]
  test_sleep.a["x"]
test_sleep.b["y"]
  test_sleep.a["y"]
`
	if got := p.Graph.String(); got != want {
		t.Errorf("graph:\n%s\nwant:\n%s", got, want)
	}
	wantOrder := `test_sleep.a["x"] test_sleep.a["y"] test_sleep.b["x"] test_sleep.b["y"] test_echo.c test_echo.d`
	if got := strings.Join(p.Order, " "); got != wantOrder {
		t.Errorf("order:\n %s\nwant\n %s", got, wantOrder)
	}
	// The same flow plans to the same graph every time.
	for i := 0; i < 5; i++ {
		if got := h.plan(src).Graph.String(); got != want {
			t.Fatalf("plan %d: graph differs:\n%s", i, got)
		}
	}
}

// A task can mark an output secret at run time (a token it read): dependents see
// the real value, every printed line and the state do not, and outputs declared
// Clean stay plain even when the task's inputs were secret.
func TestSensitiveOutputsFromTasks(t *testing.T) {
	const secret = "tok-abcdef123456"
	src := `
task "test_secret" "tok" {
  value = "` + secret + `"
}

task "test_echo" "use" {
  value = "using ${test_secret.tok.value}"
}

task "test_echo" "path" {
  value = test_secret.tok.path
}
`
	h := newHarness(t)
	o := h.run(context.Background(), h.plan(src), engine.Options{})
	if o.res.Status != state.Succeeded {
		t.Fatalf("status %s\n%s", o.res.Status, statuses(o.res.Records))
	}
	if got, _ := h.rec.input("test_echo.use"); got != "using "+secret {
		t.Errorf("test_echo.use received %q, want the real value", got)
	}
	if strings.Contains(o.out, "abcdef123456") || !strings.Contains(o.out, "[test_echo.use] using (sensitive)") {
		t.Errorf("output leaks the secret or lacks the redacted line:\n%s", o.out)
	}
	stored := h.stored(o.runID)
	for addr, wantRedacted := range map[string]bool{"test_secret.tok": true, "test_echo.use": true, "test_echo.path": false} {
		if r := stored[addr]; r.Redacted != wantRedacted {
			t.Errorf("%s: stored Redacted=%v, want %v (outputs %v)", addr, r.Redacted, wantRedacted, r.Outputs)
		}
	}
	js, _ := json.Marshal(stored)
	if strings.Contains(string(js), "abcdef123456") {
		t.Errorf("stored records leak the secret: %s", js)
	}
}
