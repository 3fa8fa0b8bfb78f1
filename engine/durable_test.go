package engine_test

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/zclconf/go-cty/cty"

	"github.com/flowdev/flow/engine"
	"github.com/flowdev/flow/engine/state"
	"github.com/flowdev/flow/internal/pagecache"
	"github.com/flowdev/flow/tasks"
)

// syncedStore is a Checkpointer that commits to the real store and then checks
// that the state file has no page the kernel has not written back: that the
// commit was synced before the committer could report it. It tells the recorder
// of each synced commit, and keeps when each one started and returned.
type syncedStore struct {
	t     *testing.T
	inner *state.Store
	rec   *recorder

	mu      sync.Mutex
	commits []syncedCommit
}

type syncedCommit struct {
	started, synced time.Time
	records         []state.Instance
}

func newSyncedStore(t *testing.T, h *harness) *syncedStore {
	t.Helper()
	if err := pagecache.Observable(h.dir); err != nil {
		// Without cachestat (Linux 6.5+) pagecache reads the pages' flags, which needs
		// root: a contributor on Debian 12's 6.1 runs this as root to see it. Under CI a
		// test that cannot see a sync fails rather than passes blind.
		if os.Getenv("CI") == "true" {
			t.Fatalf("cannot see whether a commit was synced: %v", err)
		}
		t.Skipf("cannot see whether a commit was synced: %v", err)
	}
	return &syncedStore{t: t, inner: h.store, rec: h.rec}
}

func (s *syncedStore) Commit(runID uint64, run *state.Run, insts []*state.Instance, logs map[string][]byte) error {
	started := time.Now()
	if err := s.inner.Commit(runID, run, insts, logs); err != nil {
		return err
	}
	// The committer calls Commit from one goroutine at a time, and nothing else
	// writes the state file during a run: what is dirty now is this commit's.
	if n, err := pagecache.Unsynced(s.inner.Path()); err != nil || n != 0 {
		s.t.Errorf("Commit of %d records returned with %d pages of the state file not synced (%v)", len(insts), n, err)
		return nil // not recorded as durable
	}
	c := syncedCommit{started: started, synced: time.Now()}
	for _, in := range insts {
		c.records = append(c.records, *in)
	}
	s.mu.Lock()
	s.commits = append(s.commits, c)
	s.mu.Unlock()
	s.rec.committed(insts)
	return nil
}

// firstWith returns the first commit that recorded addr with status st.
func (s *syncedStore) firstWith(addr string, st state.Status) (syncedCommit, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.commits {
		for _, in := range c.records {
			if in.Address == addr && in.Status == st {
				return c, true
			}
		}
	}
	return syncedCommit{}, false
}

// A success is on disk before any instance that depends on it starts
// (docs/checkpoints.md): every dependency's success was in a commit that had
// been synced when the dependent started. With bbolt's NoSync no commit is synced,
// and no dependent finds its dependencies durable.
func TestSuccessSyncedBeforeDependentsStart(t *testing.T) {
	src := durableFlow
	h := newHarness(t)
	store := newSyncedStore(t, h)
	p := h.plan(src)
	o := h.run(context.Background(), p, engine.Options{Parallelism: 4, Store: store})
	if o.res.Status != state.Succeeded {
		t.Fatalf("status %s\n%s", o.res.Status, statuses(o.res.Records))
	}
	checked := 0
	for _, addr := range p.Order {
		start := h.rec.seqOf("start", addr)
		for _, dep := range p.Instances[addr].Deps {
			commit := h.rec.commitSeq(dep)
			if commit == 0 {
				t.Errorf("%s: the success of its dependency %s was never synced", addr, dep)
			} else if start == 0 || start < commit {
				t.Errorf("%s started (event %d) before the success of %s was synced (event %d)", addr, start, dep, commit)
			}
			checked++
		}
	}
	if checked != 6 {
		t.Errorf("checked %d edges, want 6", checked)
	}
	h.assertStored(o)
}

// gateTask blocks until its until holds (checked after every recorder event) or its
// context ends, and outputs "open".
type gateTask struct {
	rec   *recorder
	until func() bool
}

func (t *gateTask) Validate() error { return nil }

func (t *gateTask) Run(ctx context.Context, env *tasks.Env) (tasks.Outputs, error) {
	t.rec.begin(env.Address, "")
	defer t.rec.end(env.Address)
	for !t.until() {
		select {
		case <-t.rec.changed:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return tasks.Outputs{"value": cty.StringVal("open")}, nil
}

// Records nobody waits for (a task's running record, a leaf's success) reach the disk
// while the run goes on (docs/checkpoints.md; the committer's lazyFlush), not only
// when it ends: here test_gate.long keeps the run going until the leaf's success and
// its own running record are in commits that were synced. Nothing else would write
// them before the run ends, so without the lazy flush the gate never opens. No clock
// is read: how soon the flush comes is the benchmarks' to measure; the deadline only
// keeps a broken flush from hanging the test.
func TestLeafSyncedWithinLazyFlush(t *testing.T) {
	h := newHarness(t)
	store := newSyncedStore(t, h)
	synced := func() bool {
		_, leaf := store.firstWith("test_sleep.leaf", state.Succeeded)
		_, long := store.firstWith("test_gate.long", state.Running)
		return leaf && long
	}
	h.reg.MustRegister(tasks.Type{Name: "test_gate", Outputs: valueOutput,
		New: func() tasks.Task { return &gateTask{rec: h.rec, until: synced} }})
	p := h.plan(`
task "test_sleep" "leaf" {
  ms = 1
}

task "test_gate" "long" {}
`)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	o := h.run(ctx, p, engine.Options{Parallelism: 4, Store: store})
	if o.res.Status != state.Succeeded || !synced() {
		t.Fatalf("the leaf's success and the running record of the task still running were not synced while the run went on: status %s\n%s",
			o.res.Status, statuses(o.res.Records))
	}
	h.assertStored(o)
}
