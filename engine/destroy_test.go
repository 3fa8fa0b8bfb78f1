package engine_test

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zclconf/go-cty/cty"

	"github.com/flowdev/flow/engine"
	"github.com/flowdev/flow/engine/state"
	"github.com/flowdev/flow/tasks"
)

// undoTask outputs its value and, destroyed, logs it; a value in failOnce fails its
// first destroy.
type undoTask struct {
	Value string `hcl:"value"`
	log   *undoLog
}

type undoLog struct {
	mu        sync.Mutex
	destroyed []string // "ADDR=VALUE"
	failOnce  map[string]bool
}

func (t *undoTask) Validate() error { return nil }

func (t *undoTask) Run(ctx context.Context, env *tasks.Env) (tasks.Outputs, error) {
	return tasks.Outputs{"value": cty.StringVal(t.Value)}, nil
}

func (t *undoTask) Destroy(ctx context.Context, env *tasks.Env, recorded tasks.Outputs) error {
	t.log.mu.Lock()
	defer t.log.mu.Unlock()
	if t.log.failOnce[t.Value] {
		delete(t.log.failOnce, t.Value)
		return errors.New("still in use")
	}
	got := "(none)"
	if v, ok := recorded["value"]; ok {
		got = v.AsString()
	}
	fmt.Fprintf(env.Stdout, "undoing %s\n", got)
	t.log.destroyed = append(t.log.destroyed, env.Address+"="+t.Value)
	return nil
}

const undoFlow = `
task "test_undo" "base" {
  value = "base"
}
task "test_undo" "member" {
  for_each = toset(["m1", "m2"])
  value    = "${test_undo.base.value}-${each.key}"
}
task "test_echo" "note" {
  value = test_undo.member["m1"].value
}
task "test_undo" "top" {
  value = join(",", [for k, m in test_undo.member : m.value])
}
`

// TestDestroy: instances are undone in reverse dependency order, decoded from the
// recorded outputs; a failed undo keeps what it depends on and a second destroy
// with the first's records continues where it stopped.
func TestDestroy(t *testing.T) {
	h := newHarness(t)
	log := &undoLog{failOnce: map[string]bool{"base-m2": true}}
	h.reg.MustRegister(tasks.Type{Name: "test_undo", Outputs: valueOutput, Undo: "test: logged",
		New: func() tasks.Task { return &undoTask{log: log} }})
	p := h.plan(undoFlow)
	o := h.run(context.Background(), p, engine.Options{})
	if o.res.Status != state.Succeeded {
		t.Fatalf("run: %s\n%s", o.res.Status, o.out)
	}
	created := h.stored(o.runID)

	destroyRun := h.createRun()
	out := &syncBuffer{}
	res, err := engine.NewDestroyer(p, created, engine.Options{Parallelism: 1, RunID: destroyRun, Store: h.store, Out: out}).Run(context.Background())
	if err != nil || res.Status != state.Failed || res.FirstFailure != `test_undo.member["m2"]` {
		t.Fatalf("first destroy: %v %+v\n%s", err, res, out)
	}
	if want := []string{"test_undo.top=base-m1,base-m2", `test_undo.member["m1"]=base-m1`}; !slices.Equal(log.destroyed, want) {
		t.Errorf("destroyed %q, want %q", log.destroyed, want)
	}
	for _, want := range []string{
		"[test_undo.top] undoing base-m1,base-m2",
		`test_echo.note: left as it is (flow destroy cannot undo it; see "flow tasks test_echo")`,
		`test_undo.member["m2"]: destroy failed in`,
		`test_undo.base: kept: test_undo.member["m2"], which depends on it, was not destroyed`,
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("first destroy lacks %q:\n%s", want, out)
		}
	}

	log.destroyed = nil
	out = &syncBuffer{}
	d := engine.NewDestroyer(p, created, engine.Options{Parallelism: 1, RunID: destroyRun, Store: h.store,
		Previous: h.stored(destroyRun), Out: out})
	if snap := d.Snapshot(); len(snap) != 5 || snap[0].Address != "test_undo.base" || snap[0].Status != state.Pending || snap[4].Status != state.Succeeded {
		t.Errorf("snapshot before the second destroy: %+v", snap)
	}
	res, err = d.Run(context.Background())
	if err != nil || res.Status != state.Succeeded {
		t.Fatalf("second destroy: %v %+v\n%s", err, res, out)
	}
	if want := []string{`test_undo.member["m2"]=base-m2`, "test_undo.base=base"}; !slices.Equal(log.destroyed, want) {
		t.Errorf("second destroy undid %q, want %q", log.destroyed, want)
	}
	if !strings.Contains(out.String(), "test_undo.top: already destroyed") {
		t.Errorf("second destroy:\n%s", out)
	}
	for addr, r := range h.stored(destroyRun) {
		if want := state.Succeeded; r.Status != want && addr != "test_echo.note" {
			t.Errorf("%s: %s, want %s", addr, r.Status, want)
		}
	}
}

var _ tasks.Destroyer = (*undoTask)(nil)

// scriptTask has an undo attribute, like exec's, that is not part of what it does.
type scriptTask struct {
	Value string `hcl:"value"`
	Undo  string `hcl:"undo,optional"`
}

func (t *scriptTask) Validate() error { return nil }
func (t *scriptTask) Run(ctx context.Context, env *tasks.Env) (tasks.Outputs, error) {
	return tasks.Outputs{"value": cty.StringVal(t.Value)}, nil
}
func (t *scriptTask) Destroy(ctx context.Context, env *tasks.Env, _ tasks.Outputs) error { return nil }

// TestUndoAttrIsNotFingerprinted: adding or changing an undo script does not make a
// recorded success run again.
func TestUndoAttrIsNotFingerprinted(t *testing.T) {
	h := newHarness(t)
	h.reg.MustRegister(tasks.Type{Name: "test_script", Outputs: valueOutput, Undo: "flow destroy runs undo", UndoAttr: "undo",
		New: func() tasks.Task { return &scriptTask{} }})
	o := h.run(context.Background(), h.plan(`task "test_script" "a" { value = "x" }`), engine.Options{})
	p := h.plan(`task "test_script" "a" {
  value = "x"
  undo  = "rm -rf somewhere"
}`)
	if d := engine.Decisions(p, h.previous(o.runID), nil); d[0].Action != engine.ActionSkip {
		t.Errorf("after adding undo: %+v, want skip", d[0])
	}
	p = h.plan(`task "test_script" "a" { value = "y" }`)
	if d := engine.Decisions(p, h.previous(o.runID), nil); d[0].Action != engine.ActionRun {
		t.Errorf("after changing value: %+v, want run", d[0])
	}
}

// TestDestroyRetained: an instance with retain_on_destroy is left in place; what it
// depends on and the rest are destroyed, and the destroy succeeds.
func TestDestroyRetained(t *testing.T) {
	h := newHarness(t)
	log := &undoLog{}
	h.reg.MustRegister(tasks.Type{Name: "test_undo", Outputs: valueOutput, Undo: "test: logged",
		New: func() tasks.Task { return &undoTask{log: log} }})
	res, out := runThenDestroy(t, h, `
task "test_undo" "base" {
  value = "base"
}
task "test_undo" "cache" {
  value             = "${test_undo.base.value}-cache"
  retain_on_destroy = true
}
task "test_undo" "other" {
  value = "other"
}
`)
	if res.Status != state.Succeeded {
		t.Fatalf("destroy: %+v\n%s", res, out)
	}
	if want := []string{"test_undo.other=other", "test_undo.base=base"}; !slices.Equal(log.destroyed, want) {
		t.Errorf("destroyed %q, want %q", log.destroyed, want)
	}
	for _, want := range []string{
		"test_undo.cache: retained (retain_on_destroy)",
		"test_undo.base: destroyed in",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("destroy lacks %q:\n%s", want, out)
		}
	}
}

// fileTask writes nothing; its Destroy, like kubeconfig's, reads only its path.
type fileTask struct {
	Path    string `hcl:"path"`
	Content string `hcl:"content"`
	log     *undoLog
}

func (t *fileTask) Validate() error { return nil }
func (t *fileTask) Run(ctx context.Context, env *tasks.Env) (tasks.Outputs, error) {
	return nil, nil
}
func (t *fileTask) Destroy(ctx context.Context, env *tasks.Env, _ tasks.Outputs) error {
	t.log.mu.Lock()
	defer t.log.mu.Unlock()
	t.log.destroyed = append(t.log.destroyed, fmt.Sprintf("%s=%s content=%q", env.Address, t.Path, t.Content))
	return nil
}

// TestDestroyReads: a type's DestroyReads lets destroy decode an instance whose other
// inputs were secrets (never stored), leaving them empty; a secret among the
// attributes Destroy reads still fails it, naming the attribute. An input that read a
// dependency's output that was not stored (it was redacted) is decoded from the
// instance's own record.
func TestDestroyReads(t *testing.T) {
	h := newHarness(t)
	log := &undoLog{}
	h.reg.MustRegister(tasks.Type{Name: "test_file", Undo: "test: logged", DestroyReads: []string{"path"},
		New: func() tasks.Task { return &fileTask{log: log} }})
	res, out := runThenDestroy(t, h, `
task "test_secret" "s" {
  value = "hunter2"
}
task "test_file" "f" {
  path    = "p1"
  content = test_secret.s.value
}
task "test_file" "g" {
  path    = test_secret.s.value
  content = "x"
}
task "test_file" "h" {
  path    = test_secret.s.path
  content = "y"
}
`)
	if res.Status != state.Failed || res.FirstFailure != "test_file.g" {
		t.Fatalf("destroy: %+v\n%s", res, out)
	}
	slices.Sort(log.destroyed)
	if want := []string{`test_file.f=p1 content=""`, `test_file.h=/etc/flow/secret.conf content="y"`}; !slices.Equal(log.destroyed, want) {
		t.Errorf("destroyed %q, want %q", log.destroyed, want)
	}
	// The line carries the undo's duration, which a slow machine makes non-zero.
	if want := regexp.MustCompile(`test_file\.g: destroy failed in \S+: path: its inputs read outputs that were not stored`); !want.MatchString(out.String()) {
		t.Errorf("destroy lacks %q:\n%s", want, out)
	}
	if strings.Contains(out.String(), "hunter2") {
		t.Errorf("the secret reached the output:\n%s", out)
	}
}

var _ tasks.Destroyer = (*fileTask)(nil)

// runThenDestroy runs flow, which must succeed, then destroys that run and returns the
// destroy's result and what it printed.
func runThenDestroy(t *testing.T, h *harness, flow string) (*engine.Result, *syncBuffer) {
	t.Helper()
	p := h.plan(flow)
	o := h.run(context.Background(), p, engine.Options{})
	if o.res.Status != state.Succeeded {
		t.Fatalf("run: %s\n%s", o.res.Status, o.out)
	}
	out := &syncBuffer{}
	res, err := engine.NewDestroyer(p, h.stored(o.runID), engine.Options{Parallelism: 1, RunID: h.createRun(), Store: h.store, Out: out}).Run(context.Background())
	if err != nil {
		t.Fatalf("destroy: %v\n%s", err, out)
	}
	return res, out
}

// parTask's Destroy logs its address and, for a member, waits until three members are
// being undone at once (or 10 s pass), counting how many overlap.
type parTask struct {
	Value string `hcl:"value"`
	par   *parLog
}

type parLog struct {
	mu              sync.Mutex
	order           []string
	arrived, inside int
	maxInside       int
	allThreeArrived chan struct{}
}

func (t *parTask) Validate() error { return nil }
func (t *parTask) Run(ctx context.Context, env *tasks.Env) (tasks.Outputs, error) {
	return tasks.Outputs{"value": cty.StringVal(t.Value)}, nil
}
func (t *parTask) Destroy(ctx context.Context, env *tasks.Env, _ tasks.Outputs) error {
	p := t.par
	p.mu.Lock()
	p.order = append(p.order, env.Address)
	p.inside++
	p.maxInside = max(p.maxInside, p.inside)
	member := strings.HasPrefix(env.Address, "test_par.member")
	if member {
		if p.arrived++; p.arrived == 3 {
			close(p.allThreeArrived)
		}
	}
	p.mu.Unlock()
	if member {
		select {
		case <-p.allThreeArrived:
		case <-time.After(10 * time.Second):
		}
	}
	p.mu.Lock()
	p.inside--
	p.mu.Unlock()
	return nil
}

// TestDestroyParallel: with Parallelism 3, independent instances are undone at once (at
// most three), and each only after everything that depends on it.
func TestDestroyParallel(t *testing.T) {
	h := newHarness(t)
	par := &parLog{allThreeArrived: make(chan struct{})}
	h.reg.MustRegister(tasks.Type{Name: "test_par", Outputs: valueOutput, Undo: "test: logged",
		New: func() tasks.Task { return &parTask{par: par} }})
	p := h.plan(`
task "test_par" "base" {
  value = "base"
}
task "test_par" "member" {
  for_each = toset(["m1", "m2", "m3", "m4"])
  value    = "${test_par.base.value}-${each.key}"
}
task "test_par" "top" {
  value = join(",", [for k, m in test_par.member : m.value])
}
`)
	o := h.run(context.Background(), p, engine.Options{})
	if o.res.Status != state.Succeeded {
		t.Fatalf("run: %s\n%s", o.res.Status, o.out)
	}
	out := &syncBuffer{}
	res, err := engine.NewDestroyer(p, h.stored(o.runID), engine.Options{RunID: h.createRun(), Store: h.store,
		Out: out, Parallelism: 3}).Run(context.Background())
	if err != nil || res.Status != state.Succeeded || len(res.Records) != 6 {
		t.Fatalf("destroy: %v %+v\n%s", err, res, out)
	}
	if first, last := par.order[0], par.order[len(par.order)-1]; first != "test_par.top" || last != "test_par.base" {
		t.Errorf("undone in order %q: want test_par.top first and test_par.base last", par.order)
	}
	if par.maxInside != 3 {
		t.Errorf("at most %d undone at once, want 3 (Parallelism)", par.maxInside)
	}
}

var _ tasks.Destroyer = (*parTask)(nil)
