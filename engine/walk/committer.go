package walk

import (
	"errors"
	"sync"
	"time"

	"github.com/flowdev/flow/engine/state"
)

// Checkpointer makes a batch of records durable in one transaction; *state.Store is
// the real one.
type Checkpointer interface {
	Commit(runID uint64, run *state.Run, instances []*state.Instance, logs map[string][]byte) error
}

// committed reports that the records of addrs are durable (or that err prevented it).
type committed struct {
	addrs []string
	err   error
}

// committer is a group commit: records submitted while a transaction is in flight go
// into the next one, so the number of fsyncs tracks time, not the number of tasks.
// A task that finishes is released to its dependents only once its record is durable.
// Records nobody waits for (running, failed, skipped, a leaf's success) start no transaction of
// their own: they ride along with the next one, or go out within lazyFlush.
type committer struct {
	store  Checkpointer
	runID  uint64
	events chan<- any

	mu      sync.Mutex
	recs    map[string]*state.Instance
	logs    map[string][]byte
	waiters []string
	syncs   []chan error // Durable's callers, told when their records are durable
	lazy    bool         // a lazyFlush timer is armed
	closed  bool
	final   *state.Run // written with the last batch, set by close

	kick chan struct{}
	done chan error
}

func newCommitter(store Checkpointer, runID uint64, events chan<- any) *committer {
	c := &committer{store: store, runID: runID, events: events,
		recs: map[string]*state.Instance{}, logs: map[string][]byte{},
		kick: make(chan struct{}, 1), done: make(chan error, 1)}
	go c.loop()
	return c
}

// submit queues a copy of rec. With wait set, a committed event names rec's address
// once it is durable.
func (c *committer) submit(rec *state.Instance, log []byte, wait bool) {
	cp := *rec
	c.mu.Lock()
	c.recs[rec.Address] = &cp
	if log != nil {
		c.logs[rec.Address] = log
	}
	if wait {
		c.waiters = append(c.waiters, rec.Address)
	}
	armTimer := !wait && !c.lazy
	c.lazy = c.lazy || armTimer
	c.mu.Unlock()
	switch {
	case wait:
		c.wake()
	case armTimer:
		time.AfterFunc(lazyFlush, func() {
			c.mu.Lock()
			c.lazy = false
			c.mu.Unlock()
			c.wake()
		})
	}
}

// durable queues a copy of rec for the next transaction, starts one, and returns a
// channel that receives that commit's error (nil once rec is durable).
func (c *committer) durable(rec *state.Instance) <-chan error {
	cp := *rec
	done := make(chan error, 1)
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		done <- errCommitterClosed
		return done
	}
	c.recs[rec.Address] = &cp
	c.syncs = append(c.syncs, done)
	c.mu.Unlock()
	c.wake()
	return done
}

var errCommitterClosed = errors.New("the walk's checkpoints are closed")

// lazyFlush bounds how long a record nobody waits for stays unwritten.
const lazyFlush = 200 * time.Millisecond

// wake starts a transaction unless one is already due or the committer is closed.
func (c *committer) wake() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

func (c *committer) loop() {
	var lastErr error
	for range c.kick {
		if err := c.flush(true, nil); err != nil {
			lastErr = err
		}
	}
	c.mu.Lock()
	final := c.final
	c.mu.Unlock()
	if err := c.flush(false, final); err != nil {
		lastErr = err
	}
	c.done <- lastErr
}

// flush commits what is queued, and run's record with it when run is not nil.
func (c *committer) flush(notify bool, run *state.Run) error {
	c.mu.Lock()
	recs, logs, waiters, syncs := c.recs, c.logs, c.waiters, c.syncs
	c.recs, c.logs, c.waiters, c.syncs = map[string]*state.Instance{}, map[string][]byte{}, nil, nil
	c.mu.Unlock()
	if len(recs) == 0 && run == nil {
		return nil
	}
	batch := make([]*state.Instance, 0, len(recs))
	for _, r := range recs {
		batch = append(batch, r)
	}
	err := c.store.Commit(c.runID, run, batch, logs)
	for _, s := range syncs {
		s <- err
	}
	if notify && (len(waiters) > 0 || err != nil) {
		c.events <- committed{addrs: waiters, err: err}
	}
	return err
}

// close commits whatever is still queued, with the run record final if it is not
// nil, and returns the last commit error.
func (c *committer) close(final *state.Run) error {
	c.mu.Lock()
	c.closed, c.final = true, final
	close(c.kick)
	c.mu.Unlock()
	return <-c.done
}
