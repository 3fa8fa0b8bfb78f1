package walk_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/flowdev/flow/engine/config"
	"github.com/flowdev/flow/engine/dag"
	"github.com/flowdev/flow/engine/plan"
	"github.com/flowdev/flow/engine/state"
	"github.com/flowdev/flow/engine/walk"
)

// TestWalkFollowsItsShape: the walker has no mode of its own; the order instances
// start in is the shape's (its edges, its rank), and an operation's Retry gets another
// attempt after a backoff. b and c depend on a in the plan.
func TestWalkFollowsItsShape(t *testing.T) {
	cases := []struct {
		name   string
		shape  func(p *plan.Plan, op walk.Operation) *walk.Shape
		failA  int // attempts of a that fail before one succeeds
		starts []string
	}{{
		name:   "the plan's edges, plan order",
		shape:  func(p *plan.Plan, op walk.Operation) *walk.Shape { return &walk.Shape{Order: p.Order, Op: op} },
		starts: []string{"a#1", "b#1", "c#1"},
	}, {
		name: "reversed edges, latest first",
		shape: func(p *plan.Plan, op walk.Operation) *walk.Shape {
			return &walk.Shape{Order: p.Order, Op: op, LatestFirst: true,
				Waits: map[string]int{"a": 2}, Frees: map[string][]string{"b": {"a"}, "c": {"a"}}}
		},
		starts: []string{"c#1", "b#1", "a#1"},
	}, {
		name:   "a retried before what waits for it starts",
		shape:  func(p *plan.Plan, op walk.Operation) *walk.Shape { return &walk.Shape{Order: p.Order, Op: op} },
		failA:  1,
		starts: []string{"a#1", "a#2", "b#1", "c#1"},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := chain()
			op := &recorder{failA: tc.failA}
			store := &batches{}
			r := walk.New(p, tc.shape(p, op), walk.Options{Parallelism: 1, Store: store})
			res, err := r.Run(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(op.starts, tc.starts) {
				t.Errorf("started %v, want %v", op.starts, tc.starts)
			}
			if res.Status != state.Succeeded {
				t.Errorf("status %s, want succeeded", res.Status)
			}
			for _, addr := range p.Order {
				if got := store.last[addr]; got != state.Succeeded {
					t.Errorf("%s recorded as %q, want succeeded", addr, got)
				}
			}
		})
	}
}

// chain is a plan of three instances, b and c depending on a.
func chain() *plan.Plan {
	p := &plan.Plan{Scope: &config.Scope{}, Instances: map[string]*plan.Instance{}, Graph: dag.New[string]()}
	for i, addr := range []string{"a", "b", "c"} {
		p.Instances[addr] = &plan.Instance{Addr: addr, Task: &config.Task{Type: "t", Addr: addr}, Index: i}
		p.Order = append(p.Order, addr)
		p.Graph.Add(addr)
	}
	for _, addr := range []string{"b", "c"} {
		p.Graph.Connect(addr, "a")
		p.Instances[addr].Deps = []string{"a"}
	}
	return p
}

// recorder is an operation that notes each attempt it starts and succeeds, but for
// a's first failA attempts.
type recorder struct {
	failA  int
	mu     sync.Mutex
	starts []string
}

type ended struct {
	inst *plan.Instance
	n    int
	err  error
}

func (e ended) Instance() *plan.Instance { return e.inst }

func (*recorder) Initial(inst *plan.Instance, _ *state.Instance) *state.Instance {
	return &state.Instance{Address: inst.Addr, Type: inst.Task.Type, Status: state.Pending}
}
func (*recorder) Values(*plan.Plan) map[string]cty.Value { return map[string]cty.Value{} }
func (*recorder) Context(*walk.Walk, *plan.Instance) (*hcl.EvalContext, hcl.Diagnostics) {
	return nil, nil
}
func (*recorder) Settle(*walk.Walk, *plan.Instance) walk.Outcome { return nil }
func (*recorder) StopsOnInterrupt() bool                         { return true }
func (*recorder) Judge(*walk.Walk, *walk.Result)                 {}

func (o *recorder) Perform(_ context.Context, _ *walk.Walk, inst *plan.Instance, n int, _ *hcl.EvalContext, _ hcl.Diagnostics) walk.Outcome {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.starts = append(o.starts, inst.Addr+"#"+string(rune('0'+n)))
	if inst.Addr == "a" && n <= o.failA {
		return ended{inst, n, errors.New("not yet")}
	}
	return ended{inst, n, nil}
}

func (o *recorder) Finish(w *walk.Walk, out walk.Outcome) {
	e := out.(ended)
	policy := config.RetryPolicy{Attempts: 3, Delay: time.Millisecond, MaxDelay: time.Millisecond}
	if e.err != nil && w.Retry(e.inst, e.n, policy, 0, e.err.Error()) {
		return
	}
	rec := w.Update(e.inst.Addr, func(rec *state.Instance) { rec.Status = state.Succeeded })
	w.Commit(rec, nil)
}

// batches is a Checkpointer that keeps the last status it was given of each instance.
type batches struct {
	mu   sync.Mutex
	last map[string]state.Status
}

func (b *batches) Commit(_ uint64, _ *state.Run, recs []*state.Instance, _ map[string][]byte) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.last == nil {
		b.last = map[string]state.Status{}
	}
	for _, r := range recs {
		b.last[r.Address] = r.Status
	}
	return nil
}
