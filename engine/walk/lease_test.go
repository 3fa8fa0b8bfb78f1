package walk_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2"

	"github.com/flowdev/flow/engine/config"
	"github.com/flowdev/flow/engine/dag"
	"github.com/flowdev/flow/engine/plan"
	"github.com/flowdev/flow/engine/state"
	"github.com/flowdev/flow/engine/walk"
)

// scripted is a Checkpointer with a lease the test sets: Lease answers held and lost
// as they stand; ConfirmLease tells asked and returns what the test sends on answer.
// Commits fail with broken once it is set.
type scripted struct {
	batches
	mu     sync.Mutex
	held   bool
	lost   error
	broken error
	asked  chan struct{}
	answer chan error
}

func newScripted(held bool) *scripted {
	return &scripted{held: held, asked: make(chan struct{}, 10), answer: make(chan error, 10)}
}

func (s *scripted) set(held bool, lost error) {
	s.mu.Lock()
	s.held, s.lost = held, lost
	s.mu.Unlock()
}

func (s *scripted) Lease() (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.held, s.lost
}

func (s *scripted) ConfirmLease() error {
	s.asked <- struct{}{}
	return <-s.answer
}

func (s *scripted) Commit(runID uint64, run *state.Run, recs []*state.Instance, logs map[string][]byte) error {
	s.mu.Lock()
	err := s.broken
	s.mu.Unlock()
	if err != nil {
		return err
	}
	return s.batches.Commit(runID, run, recs, logs)
}

// scriptedOp is recorder whose Perform first calls during (if set) and, for an
// instance named in blocks, runs until its context is cancelled.
type scriptedOp struct {
	recorder
	during func(addr string)
	blocks map[string]bool
}

func (o *scriptedOp) Perform(ctx context.Context, w *walk.Walk, inst *plan.Instance, n int, ectx *hcl.EvalContext, d hcl.Diagnostics) walk.Outcome {
	if o.during != nil {
		o.during(inst.Addr)
	}
	if o.blocks[inst.Addr] {
		o.mu.Lock()
		o.starts = append(o.starts, inst.Addr+"#1")
		o.mu.Unlock()
		<-ctx.Done()
		return ended{inst, n, ctx.Err()}
	}
	return o.recorder.Perform(ctx, w, inst, n, ectx, d)
}

func (o *scriptedOp) Finish(w *walk.Walk, out walk.Outcome) {
	if e := out.(ended); e.err != nil && w.Interrupted() || errors.Is(e.err, context.Canceled) {
		rec := w.Update(e.inst.Addr, func(rec *state.Instance) { rec.Status = state.Interrupted })
		w.Submit(rec, nil)
		return
	}
	o.recorder.Finish(w, out)
}

func (o *scriptedOp) started() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.starts)
}

// independent is a plan of n instances x1..xn that wait for nothing.
func independent(n int) *plan.Plan {
	p := &plan.Plan{Scope: &config.Scope{}, Instances: map[string]*plan.Instance{}, Graph: dag.New[string]()}
	for i := range n {
		addr := fmt.Sprintf("x%d", i+1)
		p.Instances[addr] = &plan.Instance{Addr: addr, Task: &config.Task{Type: "t", Addr: addr}, Index: i}
		p.Order = append(p.Order, addr)
		p.Graph.Add(addr)
	}
	return p
}

// TestNothingStartsWhileTheLeaseIsInDoubt: x1's attempt puts the store's lock in
// doubt (its connection broke); the walk starts nothing more and asks for one
// confirmation; only once it comes do x2..x4 start.
func TestNothingStartsWhileTheLeaseIsInDoubt(t *testing.T) {
	p := independent(4)
	store := newScripted(true)
	op := &scriptedOp{during: func(addr string) {
		if addr == "x1" {
			store.set(false, nil)
		}
	}}
	r := walk.New(p, &walk.Shape{Order: p.Order, Op: op}, walk.Options{Parallelism: 1, Store: store})
	done := make(chan error, 1)
	go func() { _, err := r.Run(context.Background()); done <- err }()
	select {
	case <-store.asked:
	case <-time.After(5 * time.Second):
		t.Fatal("the walk did not ask to confirm its lock while it was in doubt")
	}
	time.Sleep(200 * time.Millisecond)
	if got := op.started(); !slices.Equal(got, []string{"x1#1"}) {
		t.Errorf("started %v while the lock was in doubt, want only x1#1", got)
	}
	store.set(true, nil)
	store.answer <- nil
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := op.started(); len(got) != 4 {
		t.Errorf("started %v after the lock was confirmed, want all four", got)
	}
}

// TestNothingStartsOnceTakenOver: the store's lock is lost to another writer, as Lease
// says or as the confirmation finds; the walk starts nothing more, stops the attempt
// still running (x2, as a Ctrl-C would), says so at once and ends with the
// *state.FencedError.
func TestNothingStartsOnceTakenOver(t *testing.T) {
	fenced := &state.FencedError{Location: "postgres://db/state", Epoch: 7}
	for _, how := range []string{"lease", "confirmation"} {
		t.Run(how, func(t *testing.T) {
			p := independent(6)
			store := newScripted(true)
			op := &scriptedOp{blocks: map[string]bool{"x2": true}}
			op.during = func(addr string) {
				if addr != "x1" {
					return
				}
				time.Sleep(50 * time.Millisecond) // x2 is running
				if how == "lease" {
					store.set(false, fenced)
				} else {
					store.set(false, nil)
					store.answer <- fenced
				}
			}
			var out strings.Builder
			r := walk.New(p, &walk.Shape{Order: p.Order, Op: op}, walk.Options{Parallelism: 2, Store: store, Out: &syncWriter{w: &out}})
			done := make(chan error, 1)
			go func() { _, err := r.Run(context.Background()); done <- err }()
			var err error
			select {
			case err = <-done:
			case <-time.After(5 * time.Second):
				t.Fatal("the walk did not stop once the state was taken over")
			}
			var fe *state.FencedError
			if !errors.As(err, &fe) {
				t.Errorf("Run's error = %v, want the *state.FencedError", err)
			}
			got := op.started()
			slices.Sort(got)
			if !slices.Equal(got, []string{"x1#1", "x2#1"}) {
				t.Errorf("started %v, want only x1#1 and x2#1 (nothing after the takeover)", got)
			}
			if !strings.Contains(out.String(), "taken over") {
				t.Errorf("the walk did not say the state was taken over:\n%s", out.String())
			}
		})
	}
}

// TestResultCountsWhatIsStored: a checkpoint fails (the database went away) as x3's
// success is committed: the result counts x1 and x2, whose successes are durable, as
// succeeded, and x3 and x4 as the state holds them (pending).
func TestResultCountsWhatIsStored(t *testing.T) {
	p := independent(4)
	for i := 1; i < 4; i++ { // a line: x2 waits for x1, x3 for x2, x4 for x3
		addr, dep := p.Order[i], p.Order[i-1]
		p.Graph.Connect(addr, dep)
		p.Instances[addr].Deps = []string{dep}
	}
	store := newScripted(true)
	op := &scriptedOp{during: func(addr string) {
		if addr == "x3" {
			store.mu.Lock()
			store.broken = errors.New("the connection broke")
			store.mu.Unlock()
		}
	}}
	r := walk.New(p, &walk.Shape{Order: p.Order, Op: op}, walk.Options{Parallelism: 1, Store: store})
	res, err := r.Run(context.Background())
	if err == nil {
		t.Fatal("Run reported no error though a checkpoint failed")
	}
	got := map[string]state.Status{}
	for _, rec := range res.Records {
		got[rec.Address] = rec.Status
	}
	want := map[string]state.Status{"x1": state.Succeeded, "x2": state.Succeeded, "x3": state.Pending, "x4": state.Pending}
	for addr, s := range want {
		if got[addr] != s {
			t.Errorf("result: %s %s, want %s (as stored)", addr, got[addr], s)
		}
	}
}

// syncWriter serialises writes to w.
type syncWriter struct {
	mu sync.Mutex
	w  *strings.Builder
}

func (s *syncWriter) Write(b []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(b)
}
