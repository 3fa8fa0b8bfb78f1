package state

import (
	"errors"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/flowdev/flow/internal/pgtest"
)

// TestPGLease: a writer's lease is held after Open, expires LeaseFor after its last
// round trip and is renewed by ConfirmLease; a session ended without a takeover is
// taken back under the same epoch; once another writer took the state, ConfirmLease
// and Lease say it is lost and every write fails at once.
func TestPGLease(t *testing.T) {
	loc := pgState(t)
	a := open(t, loc)
	if held, lost := a.Lease(); !held || lost != nil {
		t.Fatalf("Lease after Open = %v, %v; want held", held, lost)
	}
	time.Sleep(LeaseFor + 100*time.Millisecond)
	if held, _ := a.Lease(); held {
		t.Error("Lease still held LeaseFor after the last round trip")
	}
	if err := a.ConfirmLease(); err != nil {
		t.Fatal(err)
	}
	if held, _ := a.Lease(); !held {
		t.Error("Lease not held after ConfirmLease")
	}
	r := &Run{Flow: "f", Status: Running}
	if err := a.CreateRun(r); err != nil {
		t.Fatal(err)
	}

	terminate(t, backendPID(a)) // no takeover: the lock comes back under the same epoch
	if err := a.ConfirmLease(); err != nil {
		t.Fatalf("ConfirmLease after the session ended, nobody took over: %v", err)
	}
	if held, lost := a.Lease(); !held || lost != nil {
		t.Errorf("Lease after the reconnection = %v, %v; want held", held, lost)
	}

	terminate(t, backendPID(a)) // another writer takes the state and leaves
	b, err := Open(loc, Options{})
	if err != nil {
		t.Fatal(err)
	}
	b.Close()
	err = a.ConfirmLease()
	var fe *FencedError
	if !errors.As(err, &fe) {
		t.Fatalf("ConfirmLease after a takeover = %v, want a *FencedError", err)
	}
	if held, lost := a.Lease(); held || !errors.As(lost, &fe) {
		t.Errorf("Lease after a takeover = %v, %v; want lost", held, lost)
	}
	start := time.Now()
	if err := a.Commit(r.ID, nil, []*Instance{{Address: "a", Status: Succeeded}}, nil); !errors.As(err, &fe) || time.Since(start) > time.Second {
		t.Errorf("commit after the takeover: %v after %s, want a *FencedError at once", err, time.Since(start))
	}
}

// TestPGOutage: while the server is down a call waits, says so once, and never says
// the database is back; GiveUpWithin ends the wait of a call already waiting.
func TestPGOutage(t *testing.T) {
	c := pgtest.Shared(t)
	loc := pgState(t)
	var mu sync.Mutex
	var broke, back int
	waiting := func(err error, _ time.Duration) {
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			broke++
		} else {
			back++
		}
	}
	s, err := Open(loc, Options{RetryFor: time.Minute, Waiting: waiting})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r := &Run{Flow: "f", Status: Running}
	if err := s.CreateRun(r); err != nil {
		t.Fatal(err)
	}
	if err := c.Crash(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Resume() })
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- s.Commit(r.ID, nil, []*Instance{{Address: "a", Status: Succeeded}}, nil) }()
	time.Sleep(time.Second)
	if held, _ := s.Lease(); held {
		t.Error("Lease held while the connection is broken")
	}
	s.GiveUpWithin(time.Second)
	select {
	case err = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the commit went on waiting after GiveUpWithin")
	}
	if err == nil {
		t.Fatal("a commit while the server is down succeeded")
	}
	t.Logf("gave up after %s: %v", time.Since(start).Round(time.Millisecond), err)
	if since := time.Since(start); since > 4*time.Second {
		t.Errorf("the commit gave up %s after it began, want within 1 s of GiveUpWithin (plus one retry step)", since)
	}
	// A call after giving up tries once more, and fails at once.
	start = time.Now()
	if err := s.ConfirmLease(); err == nil || time.Since(start) > 3*time.Second {
		t.Errorf("ConfirmLease after giving up: %v after %s", err, time.Since(start))
	}
	mu.Lock()
	defer mu.Unlock()
	if broke == 0 || back != 0 {
		t.Errorf("told of %d breaks and %d comebacks while the server was down, want some and none", broke, back)
	}
}

// TestPGMigrationLock: a migration holds its source as a writer does: `flow state
// lock` names it with a new epoch, a second writer is refused naming it, and a
// migration whose lock another writer took marks nothing moved.
func TestPGMigrationLock(t *testing.T) {
	src := pgState(t)
	a := open(t, src)
	if err := a.CreateRun(&Run{Flow: "f", Status: Succeeded}); err != nil {
		t.Fatal(err)
	}
	before := a.pg.holder.Epoch
	a.Close()

	from, err := openSource(src)
	if err != nil {
		t.Fatal(err)
	}
	defer from.Close()
	info, err := Lock(src)
	if err != nil {
		t.Fatal(err)
	}
	if !info.Held || info.Holder == nil || info.Holder.PID != os.Getpid() || info.Holder.Epoch != before+1 ||
		info.Holder.BackendPID != backendPID(from) {
		t.Errorf("state lock during the migration = %+v (holder %+v), want held by this process at epoch %d, backend %d",
			info, info.Holder, before+1, backendPID(from))
	}
	_, err = Open(src, Options{})
	var le *LockedError
	if !errors.As(err, &le) || le.Holder == nil || le.Holder.Epoch != before+1 {
		t.Errorf("a second writer during the migration: %v, want a *LockedError naming the migration", err)
	}

	terminate(t, backendPID(from)) // the migration's session ends; a writer takes the state
	b, err := Open(src, Options{})
	if err != nil {
		t.Fatal(err)
	}
	b.Close()
	err = from.markMoved(Identity{MovedTo: "elsewhere"})
	if !errors.As(err, new(*FencedError)) {
		t.Errorf("moved mark after a takeover: %v, want a *FencedError", err)
	}
	ro, err := Open(src, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if id, err := ro.Identity(); err != nil || id.MovedTo != "" {
		t.Errorf("after a fenced migration the source says moved to %q (%v)", id.MovedTo, err)
	}
}

// TestPGTakeoverWaitsOutTheLease: a writer that took the lock from a holder whose
// session ended without releasing it (paused, partitioned) holds no lease until the
// old holder's has run out; after a holder that closed the state, at once.
func TestPGTakeoverWaitsOutTheLease(t *testing.T) {
	loc := pgState(t)
	a, err := Open(loc, Options{RetryFor: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	terminate(t, backendPID(a))
	b, err := Open(loc, Options{})
	if err != nil {
		t.Fatal(err)
	}
	took := time.Now()
	if held, _ := b.Lease(); held {
		t.Error("B holds a lease at once after taking the lock from a holder that did not release it")
	}
	if err := b.ConfirmLease(); err != nil {
		t.Fatal(err)
	}
	if waited := time.Since(took); waited < LeaseFor-200*time.Millisecond {
		t.Errorf("B's lease was confirmed %s after it took the lock, want LeaseFor (%s)", waited, LeaseFor)
	}
	if held, _ := b.Lease(); !held {
		t.Error("B holds no lease after ConfirmLease")
	}
	b.Close()
	c := open(t, loc)
	if held, _ := c.Lease(); !held {
		t.Error("C holds no lease after B released the lock itself")
	}
	if info, err := Lock(loc); err != nil || info.Holder == nil || info.Holder.Released {
		t.Errorf("Lock while C holds it = %+v, %v; want a holder not released", info, err)
	}
	c.Close()
	if info, err := Lock(loc); err != nil || info.Held || info.Holder == nil || !info.Holder.Released {
		t.Errorf("Lock after C closed = %+v, %v; want released", info, err)
	}
}
