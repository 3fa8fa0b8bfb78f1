package walk_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/hcl/v2"

	"github.com/flowdev/flow/engine/plan"
	"github.com/flowdev/flow/engine/state"
	"github.com/flowdev/flow/engine/walk"
)

// TestDurableBeforeActing: what a worker makes durable with Walk.Durable is in the
// checkpointer before Durable returns, and a checkpoint that fails is Durable's error:
// the attempt must not act, and nothing that waits for it starts.
func TestDurableBeforeActing(t *testing.T) {
	cases := []struct {
		name   string
		fail   bool
		starts []string // the attempts that acted
	}{
		{name: "durable first", starts: []string{"a", "b", "c"}},
		{name: "the checkpoint fails", fail: true, starts: nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			store := &failing{fail: tc.fail}
			op := &actor{store: store}
			r := walk.New(chain(), &walk.Shape{Order: []string{"a", "b", "c"}, Op: op}, walk.Options{Parallelism: 2, Store: store})
			_, err := r.Run(context.Background())
			if tc.fail != (err != nil) {
				t.Errorf("walk error %v, want one: %v", err, tc.fail)
			}
			slices.Sort(op.acted)
			if !slices.Equal(op.acted, tc.starts) {
				t.Errorf("acted %v, want %v", op.acted, tc.starts)
			}
			for _, addr := range op.acted {
				if !op.seen[addr] {
					t.Errorf("%s acted before its running record was durable", addr)
				}
			}
		})
	}
}

// failing is a Checkpointer that keeps every record it was given, or fails each commit.
type failing struct {
	fail bool
	mu   sync.Mutex
	recs map[string]state.Status
}

func (f *failing) Commit(_ uint64, _ *state.Run, recs []*state.Instance, _ map[string][]byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail {
		return errors.New("disk full")
	}
	if f.recs == nil {
		f.recs = map[string]state.Status{}
	}
	for _, r := range recs {
		f.recs[r.Address] = r.Status
	}
	return nil
}

func (f *failing) status(addr string) state.Status {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.recs[addr]
}

// actor makes its running record durable, then acts: it notes whether the
// checkpointer held the record by then.
type actor struct {
	recorder
	store *failing
	mu    sync.Mutex
	acted []string
	seen  map[string]bool
}

func (o *actor) Perform(_ context.Context, w *walk.Walk, inst *plan.Instance, n int, _ *hcl.EvalContext, _ hcl.Diagnostics) walk.Outcome {
	rec := w.Update(inst.Addr, func(rec *state.Instance) { rec.Status = state.Running })
	if err := w.Durable(rec); err != nil {
		return ended{inst, n, err}
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.seen == nil {
		o.seen = map[string]bool{}
	}
	o.acted = append(o.acted, inst.Addr)
	o.seen[inst.Addr] = o.store.status(inst.Addr) == state.Running
	return ended{inst, n, nil}
}

func (o *actor) Finish(w *walk.Walk, out walk.Outcome) {
	e := out.(ended)
	status := state.Succeeded
	if e.err != nil {
		status = state.Failed
	}
	rec := w.Update(e.inst.Addr, func(rec *state.Instance) { rec.Status = status })
	if e.err != nil {
		w.Failed(e.inst.Addr)
		w.SkipDependents(e.inst.Addr)
		w.Submit(rec, nil)
		return
	}
	w.Commit(rec, nil)
}

// doubtful is a Checkpointer whose lock falls in doubt once doubt is set.
type doubtful struct {
	failing
	mu    sync.Mutex
	doubt bool
}

func (d *doubtful) Lease() (bool, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return !d.doubt, nil
}
func (d *doubtful) ConfirmLease() error { return nil }

// TestDurableConfirmsTheLock: a record made durable is not enough to act on when the
// store's lock fell in doubt meanwhile (the process was paused after the walk started
// the attempt): Durable then fails, and the attempt must not act.
func TestDurableConfirmsTheLock(t *testing.T) {
	store := &doubtful{}
	var durableErr error
	op := &doubter{store: store, err: &durableErr}
	r := walk.New(chain(), &walk.Shape{Order: []string{"a", "b", "c"}, Op: op}, walk.Options{Parallelism: 1, Store: store})
	if _, err := r.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if durableErr == nil || !strings.Contains(durableErr.Error(), "in doubt") {
		t.Errorf("Durable = %v, want the lock in doubt", durableErr)
	}
}

// doubter puts its store's lock in doubt after the walk started the attempt, then asks
// Durable.
type doubter struct {
	actor
	store *doubtful
	err   *error
}

func (o *doubter) Perform(_ context.Context, w *walk.Walk, inst *plan.Instance, n int, _ *hcl.EvalContext, _ hcl.Diagnostics) walk.Outcome {
	o.store.mu.Lock()
	o.store.doubt = true
	o.store.mu.Unlock()
	*o.err = w.Durable(w.Update(inst.Addr, func(rec *state.Instance) { rec.Status = state.Running }))
	return ended{inst, n, *o.err}
}
