package engine_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flowdev/flow/engine"
	"github.com/flowdev/flow/engine/state"
)

const probeFlow = `
task "test_probe" "a" {
  value = "made"
}

task "test_sleep" "b" {
  ms  = 1
  key = test_probe.a.value
}
`

// TestRefresh: before a resume lets a recorded success of a tasks.Prober stand, the
// engine asks it about its object, with the recorded outputs. No drift: it stands.
// Drift, or a probe that cannot look (an error, which must never pass for "no
// drift"): it runs again, and the run says why. --refresh=false asks nothing.
func TestRefresh(t *testing.T) {
	for _, tc := range []struct {
		name      string
		answer    probeAnswer
		noRefresh bool
		probes    int
		reran     bool
		why       string
	}{
		{name: "no drift", probes: 1},
		{name: "drift", answer: probeAnswer{drift: "it is gone"}, probes: 1, reran: true,
			why: "drifted since it succeeded: it is gone"},
		{name: "probe error", answer: probeAnswer{err: errors.New("the daemon does not answer")}, probes: 1, reran: true,
			why: "refresh could not look at it (the daemon does not answer)"},
		{name: "refresh=false", answer: probeAnswer{drift: "it is gone"}, noRefresh: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			ctx := context.Background()
			p := h.plan(probeFlow)
			first := h.run(ctx, p, engine.Options{})
			if first.res.Status != state.Succeeded {
				t.Fatalf("first run: %s\n%s", first.res.Status, first.out)
			}
			if n, _ := h.rec.probesOf("test_probe.a"); n != 0 {
				t.Errorf("a new run probed %d times", n)
			}
			h.rec.reset()
			h.rec.answer("test_probe.a", tc.answer)
			o := h.run(ctx, h.plan(probeFlow), engine.Options{RunID: first.runID, Previous: h.previous(first.runID), NoRefresh: tc.noRefresh})
			if o.res.Status != state.Succeeded {
				t.Fatalf("resume: %s\n%s", o.res.Status, o.out)
			}
			n, seen := h.rec.probesOf("test_probe.a")
			if n != tc.probes {
				t.Errorf("probed %d times, want %d", n, tc.probes)
			}
			if n > 0 && seen != "made" {
				t.Errorf("the probe was given recorded value %q, want \"made\"", seen)
			}
			a := o.byAddr()["test_probe.a"]
			if got := h.rec.runsOf("test_probe.a") == 1; got != tc.reran {
				t.Errorf("ran again: %v, want %v\n%s", got, tc.reran, o.out)
			}
			if !tc.reran {
				if !strings.HasPrefix(a.Reason, "up to date") {
					t.Errorf("reason %q, want up to date", a.Reason)
				}
				return
			}
			if a.Reason != tc.why {
				t.Errorf("reason %q, want %q", a.Reason, tc.why)
			}
			if want := "test_probe.a: " + tc.why + "; running it again"; !strings.Contains(o.out, want) {
				t.Errorf("output lacks %q:\n%s", want, o.out)
			}
			// b reads the same value again: its inputs did not change.
			if h.rec.runsOf("test_sleep.b") != 0 {
				t.Errorf("b ran again though its inputs are the same:\n%s", o.out)
			}
		})
	}
}

// TestRefreshInPlan: the plan of a resume asks the same question, and an instance a
// probe could not look at is planned to run, saying so.
func TestRefreshInPlan(t *testing.T) {
	for _, tc := range []struct {
		name      string
		answer    probeAnswer
		noRefresh bool
		action    engine.Action
		why       string
	}{
		{name: "no drift", action: engine.ActionSkip, why: "up to date"},
		{name: "drift", answer: probeAnswer{drift: "it is gone"}, action: engine.ActionRun, why: "drifted since it succeeded: it is gone"},
		{name: "probe error", answer: probeAnswer{err: errors.New("the daemon does not answer")}, action: engine.ActionRun,
			why: "refresh could not look at it (the daemon does not answer)"},
		{name: "refresh=false", answer: probeAnswer{err: errors.New("not asked")}, noRefresh: true, action: engine.ActionSkip, why: "up to date"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			flow := filepath.Join(h.dir, "flow.hcl")
			h.plan(probeFlow + "\ntask \"test_fail\" \"f\" {\n  fail_times = 1\n}\n") // writes flow.hcl
			s := engine.NewSession(filepath.Join(h.dir, "session.db"), h.reg)
			out, err := s.Run(context.Background(), engine.Request{Flow: flow, Parallelism: 1})
			if err != nil || out.Result.Status != state.Failed {
				t.Fatalf("first run: %v %+v", err, out)
			}
			h.rec.reset()
			h.rec.answer("test_probe.a", tc.answer)
			pv, err := s.Preview(t.Context(), engine.Request{Flow: flow, NoRefresh: tc.noRefresh})
			if err != nil {
				t.Fatal(err)
			}
			var a *engine.Decision
			for i := range pv.Decisions {
				if pv.Decisions[i].Addr == "test_probe.a" {
					a = &pv.Decisions[i]
				}
			}
			if a == nil || a.Action != tc.action || !strings.HasPrefix(a.Reason, tc.why) {
				t.Errorf("plan of test_probe.a: %+v, want %s (%s)", a, tc.action, tc.why)
			}
			if n, _ := h.rec.probesOf("test_probe.a"); (n == 1) == tc.noRefresh || n > 1 {
				t.Errorf("probed %d times (--refresh=false: %v)", n, tc.noRefresh)
			}
			if h.rec.runsOf("test_probe.a") != 0 {
				t.Error("the plan ran the task")
			}
		})
	}
}

// TestRefreshInPlanBounded: a plan's refresh probes obey --parallelism as a walk's tasks
// do, and Ctrl-C (the context's end) stops them: no further probe starts and the plan
// is refused with the context's error.
func TestRefreshInPlanBounded(t *testing.T) {
	const probes = `
task "test_probe" "p" {
  for_each = toset(["1", "2", "3", "4", "5", "6"])
  value    = each.key
}

task "test_fail" "f" {
  fail_times = 1
}
`
	h := newHarness(t)
	flow := filepath.Join(h.dir, "flow.hcl")
	h.plan(probes) // writes flow.hcl
	s := engine.NewSession(filepath.Join(h.dir, "session.db"), h.reg)
	if out, err := s.Run(context.Background(), engine.Request{Flow: flow}); err != nil || out.Result.Status != state.Failed {
		t.Fatalf("first run: %v %+v", err, out)
	}
	addrs := []string{`test_probe.p["1"]`, `test_probe.p["2"]`, `test_probe.p["3"]`, `test_probe.p["4"]`, `test_probe.p["5"]`, `test_probe.p["6"]`}
	probed := func() (n int) {
		for _, a := range addrs {
			c, _ := h.rec.probesOf(a)
			n += c
		}
		return n
	}

	t.Run("parallelism", func(t *testing.T) {
		h.rec.reset()
		for _, a := range addrs {
			h.rec.answer(a, probeAnswer{hold: 20 * time.Millisecond})
		}
		if _, err := s.Preview(t.Context(), engine.Request{Flow: flow, Parallelism: 2}); err != nil {
			t.Fatal(err)
		}
		h.rec.mu.Lock()
		most := h.rec.probingMax
		h.rec.mu.Unlock()
		if n := probed(); n != len(addrs) || most > 2 {
			t.Errorf("%d probes, at most %d at once; want %d, at most 2", n, most, len(addrs))
		}
	})

	t.Run("interrupted", func(t *testing.T) {
		h.rec.reset()
		for _, a := range addrs {
			h.rec.answer(a, probeAnswer{hold: time.Hour})
		}
		ctx, cancel := context.WithCancel(t.Context())
		go func() {
			for probed() == 0 {
				time.Sleep(time.Millisecond)
			}
			cancel()
		}()
		_, err := s.Preview(ctx, engine.Request{Flow: flow, Parallelism: 2})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Preview after Ctrl-C: %v, want context.Canceled", err)
		}
		if n := probed(); n > 2 {
			t.Errorf("%d probes started, want at most the 2 running when it was interrupted", n)
		}
	})
}
