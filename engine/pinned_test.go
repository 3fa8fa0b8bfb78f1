package engine_test

// Unit tests pinning behaviour that only an e2e test or a golden file caught before
// (issue 27): --replace undoes before it runs, the plugins a run used are recorded
// and a changed one is a warning, and a destroy at parallelism 1 undoes independent
// instances latest first.

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/flowdev/flow/engine"
	"github.com/flowdev/flow/engine/config"
	"github.com/flowdev/flow/engine/state"
	"github.com/flowdev/flow/tasks"
)

// seqLog is the order of Run and Destroy calls of test_seq instances.
type seqLog struct {
	mu    sync.Mutex
	calls []string
	fail  bool // Destroy fails
}

func (l *seqLog) add(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls = append(l.calls, fmt.Sprintf(format, args...))
}

// seqTask logs "run ADDR=VALUE" and, destroyed, "destroy ADDR=RECORDED", RECORDED
// being the value its recorded outputs hold.
type seqTask struct {
	Value string `hcl:"value"`
	log   *seqLog
}

func (t *seqTask) Validate() error { return nil }

func (t *seqTask) Run(ctx context.Context, env *tasks.Env) (tasks.Outputs, error) {
	t.log.add("run %s=%s", env.Address, t.Value)
	return tasks.Outputs{"value": cty.StringVal(t.Value)}, nil
}

func (t *seqTask) Destroy(ctx context.Context, env *tasks.Env, recorded tasks.Outputs) error {
	got := "(none)"
	if v, ok := recorded["value"]; ok {
		got = v.AsString()
	}
	t.log.add("destroy %s=%s", env.Address, got)
	if t.log.fail {
		return errors.New("still in use")
	}
	return nil
}

func registerSeq(h *harness) *seqLog {
	log := &seqLog{}
	h.reg.MustRegister(tasks.Type{Name: "test_seq", Outputs: valueOutput, Undo: "test: logged",
		New: func() tasks.Task { return &seqTask{log: log} }})
	return log
}

func seqFlow(value string) string {
	return fmt.Sprintf(`
task "test_seq" "a" {
  value = %q
}
task "test_seq" "b" {
  value = "b"
}
`, value)
}

// TestReplaceUndoesBeforeRun: --replace of an instance that can be undone calls its
// Destroy, with the outputs its earlier success recorded, before its Run; what it
// does not select stands. A failed undo does not run it.
func TestReplaceUndoesBeforeRun(t *testing.T) {
	for _, fail := range []bool{false, true} {
		t.Run(fmt.Sprintf("undo fails %v", fail), func(t *testing.T) {
			h := newHarness(t)
			log := registerSeq(h)
			ctx := context.Background()
			first := h.run(ctx, h.plan(seqFlow("v1")), engine.Options{Parallelism: 1})
			if first.res.Status != state.Succeeded {
				t.Fatalf("first run: %s\n%s", first.res.Status, first.out)
			}
			log.calls, log.fail = nil, fail
			o := h.run(ctx, h.plan(seqFlow("v2")), engine.Options{Replace: []string{"test_seq.a"},
				Previous: h.previous(first.runID)})
			want := []string{"destroy test_seq.a=v1", "run test_seq.a=v2"}
			status := state.Succeeded
			if fail {
				want, status = want[:1], state.Failed
			}
			if !slices.Equal(log.calls, want) {
				t.Errorf("calls %q, want %q\n%s", log.calls, want, o.out)
			}
			a := o.byAddr()["test_seq.a"]
			if a.Status != status || !fail && a.Reason != "replaced (--replace): undone, then run again" {
				t.Errorf("test_seq.a: %s, reason %q; want %s", a.Status, a.Reason, status)
			}
			if fail && !strings.Contains(a.Error, "undo before replacing: still in use") {
				t.Errorf("error %q", a.Error)
			}
			if !strings.Contains(o.out, "test_seq.a: undoing what it made before") {
				t.Errorf("output:\n%s", o.out)
			}
		})
	}
}

// TestDestroyLatestFirst: at parallelism 1, instances that do not depend on one
// another are undone latest in plan order first.
func TestDestroyLatestFirst(t *testing.T) {
	h := newHarness(t)
	log := registerSeq(h)
	p := h.plan(`
task "test_seq" "one" {
  value = "1"
}
task "test_seq" "two" {
  for_each = toset(["x", "y"])
  value    = each.key
}
task "test_seq" "three" {
  value = "3"
}
`)
	o := h.run(context.Background(), p, engine.Options{Parallelism: 1})
	if o.res.Status != state.Succeeded {
		t.Fatalf("run: %s\n%s", o.res.Status, o.out)
	}
	made := slices.Clone(log.calls)
	log.calls = nil
	values := map[string]string{"test_seq.one": "1", `test_seq.two["x"]`: "x", `test_seq.two["y"]`: "y", "test_seq.three": "3"}
	res, err := engine.NewDestroyer(p, h.stored(o.runID), engine.Options{Parallelism: 1, RunID: h.createRun(), Store: h.store}).Run(context.Background())
	if err != nil || res.Status != state.Succeeded {
		t.Fatalf("destroy: %v %+v", err, res)
	}
	var want []string // the plan's order, backwards
	for i := len(p.Order) - 1; i >= 0; i-- {
		want = append(want, "destroy "+p.Order[i]+"="+values[p.Order[i]])
	}
	if len(want) != 4 || !slices.Equal(log.calls, want) {
		t.Errorf("destroyed %q, want %q (made %q)", log.calls, want, made)
	}
}

// pluginHost fakes the plugin host (plugin/host starts real executables; the e2e
// tests run those): it serves test_plug, an echo type, for source "./p", with the
// sha256 the test sets.
type pluginHost struct {
	rec *recorder
	sum string
}

func (l *pluginHost) Load(spec tasks.PluginSpec) (tasks.PluginUse, []tasks.Type, error) {
	use := tasks.PluginUse{Name: spec.Name, Path: filepath.Join(spec.Dir, "p"), Sha256: l.sum, Types: []string{"test_plug"}}
	return use, []tasks.Type{{Name: "test_plug", Outputs: valueOutput,
		New: func() tasks.Task { return &echoTask{rec: l.rec} }}}, nil
}

// TestPluginRecordedAndChangeWarned_FakesThePluginHost: a run records each plugin's
// path and sha256; a resume with a plugin whose sha256 changed warns, naming both
// sums and the instances that will run with the new executable, and records the new
// sum.
func TestPluginRecordedAndChangeWarned_FakesThePluginHost(t *testing.T) {
	h := newHarness(t)
	t.Chdir(h.dir) // the run records the directory it starts in
	host := &pluginHost{rec: h.rec, sum: strings.Repeat("a", 64)}
	h.reg.SetPluginLoader(host)
	h.plan(`
plugin "p" {
  source = "./p"
}
task "test_fail" "f" {
  fail_times = 1
}
task "test_plug" "a" {
  value = "a"
}
task "test_plug" "b" {
  depends_on = [test_fail.f]
  value      = "b"
}
`)
	flow, path := filepath.Join(h.dir, "flow.hcl"), filepath.Join(h.dir, "session.db")
	s := engine.NewSession(path, h.reg)
	out, err := s.Run(context.Background(), engine.Request{Flow: flow, Parallelism: 1})
	if err != nil || out.Result.Status != state.Failed {
		t.Fatalf("first run: %v %+v", err, out)
	}
	if got := recordedPlugins(t, path); len(got) != 1 || got[0].Sha256 != host.sum || got[0].Path != filepath.Join(h.dir, "p") ||
		!slices.Equal(got[0].Types, []string{"test_plug"}) {
		t.Errorf("run record's plugins: %+v", got)
	}

	host.sum = strings.Repeat("b", 64)
	var warned hcl.Diagnostics
	out, err = s.Resume(context.Background(), engine.Request{Parallelism: 1,
		Warn: func(_ *config.Flow, d hcl.Diagnostics) { warned = append(warned, d...) }})
	if err != nil || out.Result.Status != state.Succeeded {
		t.Fatalf("resume: %v %+v", err, out)
	}
	if len(warned) != 1 || warned[0].Summary != "Plugin changed since the run started" ||
		!strings.Contains(warned[0].Detail, "(sha256 aaaaaaaaaaaa) and is now") ||
		!strings.Contains(warned[0].Detail, "(sha256 bbbbbbbbbbbb). The resumed run uses the new executable for test_plug.b.") {
		t.Errorf("warnings: %v", warned)
	}
	// Every executable the run used: the first attempt's and the resume's.
	if got := recordedPlugins(t, path); len(got) != 2 || got[0].Sha256 != strings.Repeat("a", 64) || got[1].Sha256 != host.sum {
		t.Errorf("after the resume the run records %+v, want sha256 aaaa… then %s", got, host.sum)
	}
}

func recordedPlugins(t *testing.T, path string) []state.Plugin {
	t.Helper()
	st, err := state.Open(path, state.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	run, err := st.LatestRun()
	if err != nil || run == nil {
		t.Fatalf("latest run: %v %v", run, err)
	}
	return run.Plugins
}
