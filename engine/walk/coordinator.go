package walk

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/zclconf/go-cty/cty"

	"github.com/flowdev/flow/engine/config"
	"github.com/flowdev/flow/engine/plan"
	"github.com/flowdev/flow/engine/state"
)

// queued is an instance ready to start its next attempt.
type queued struct {
	inst    *plan.Instance
	attempt int
	rank    int // Runner.rank
}

// readyQueue starts instances by rank, whatever order they became ready in: in plan
// order unless the shape says latest first, so `flow plan` shows the order a run
// starts them in.
type readyQueue []queued

func (q readyQueue) Len() int           { return len(q) }
func (q readyQueue) Less(i, j int) bool { return q[i].rank < q[j].rank }
func (q readyQueue) Swap(i, j int)      { q[i], q[j] = q[j], q[i] }
func (q *readyQueue) Push(x any)        { *q = append(*q, x.(queued)) }
func (q *readyQueue) Pop() any {
	old := *q
	x := old[len(old)-1]
	*q = old[:len(old)-1]
	return x
}

// retryDue puts an instance back in the ready queue after its backoff.
type retryDue queued

// Leaser is a Checkpointer whose writer's lock can be lost or fall in doubt (a
// PostgreSQL state: its connection broke, or another writer took it over);
// *state.Store is the real one. The walk starts no attempt unless Lease says held.
type Leaser interface {
	// Lease reports, without I/O, whether the lock is confirmed now; lost is non-nil
	// (a *state.FencedError) once another writer took the state over, for good.
	Lease() (held bool, lost error)
	// ConfirmLease confirms the lock with a round trip, waiting out a broken
	// connection; it fails with the *state.FencedError once the state was taken over.
	ConfirmLease() error
}

// unstarted is an attempt a worker gave back without performing it: the lease was no
// longer held when it was about to act.
type unstarted struct {
	inst    *plan.Instance
	attempt int
}

// leaseChecked carries the outcome of a ConfirmLease back to the walk's goroutine.
type leaseChecked struct{ err error }

// stored is the walk's Checkpointer, remembering what it made durable: after a
// checkpoint failed, the result counts each instance as the state holds it. It keeps
// the committer's records, which are copies nobody changes once submitted.
type stored struct {
	Checkpointer
	mu   sync.Mutex
	recs map[string]*state.Instance
}

func (s *stored) Commit(runID uint64, run *state.Run, instances []*state.Instance, logs map[string][]byte) error {
	err := s.Checkpointer.Commit(runID, run, instances, logs)
	if err == nil {
		s.mu.Lock()
		for _, rec := range instances {
			s.recs[rec.Address] = rec
		}
		s.mu.Unlock()
	}
	return err
}

// performed carries a worker's outcome back to the walk's goroutine.
type performed struct{ Outcome }

// coordinator is the state of one Run, owned by the Run goroutine alone: the one
// walker, of whatever graph its shape gives. Workers only run one attempt and report
// back; they never wait on dependencies or hold a slot while waiting, so a slot is
// busy exactly while an operation's Perform is.
type coordinator struct {
	*Runner
	walk     *Walk // what the operation is given
	tasksCtx context.Context
	events   chan any
	commit   *committer
	stored   *stored
	cancel   context.CancelFunc // cancels tasksCtx
	// lease is the store's lock when it can be lost (nil: a file's cannot);
	// confirming is set while a ConfirmLease runs.
	lease      Leaser
	confirming bool

	waiting  map[string]int           // unfinished dependencies per instance
	values   map[string]cty.Value     // finished instances, as dependents see them
	final    map[string]bool          // succeeded, failed, skipped or interrupted
	started  map[string]time.Time     // running instances
	reportAt map[string]time.Duration // running instances: elapsed time of the next "still running" line
	// runningOf and held enforce max_parallel: instances of a task at its bound wait in
	// held, in plan order, outside the ready queue, holding no slot.
	runningOf map[*config.Task]int
	held      map[*config.Task]*readyQueue
	backoff   map[string]*time.Timer
	ready     readyQueue
	running   int
	inflight  int // submitted records whose durability someone waits for

	stopping     bool
	interrupted  bool
	fatal        error
	firstFailure string
}

// Run walks the plan in its shape: an instance is ready once everything it waits for
// has ended and is durable; ready instances start in rank order up to the parallelism
// bound (and each task's max_parallel), and the operation decides what each start
// does and how it ends. Cancelling ctx interrupts running attempts; the walk then
// starts nothing more or lets the operation settle the rest, as the operation says
// (StopsOnInterrupt). Each result is checkpointed, so an interrupted walk continues
// where it stopped. When the store is a Leaser, an attempt starts only while its lease
// is held; once the state was taken over, the walk stops as on an interrupt and the
// error is the *state.FencedError. The error is non-nil only when checkpoints could not
// be written or the lock was lost (then nothing new starts, and the Result's records are
// what the state holds); task failures are in the Result.
func (r *Runner) Run(ctx context.Context) (*Result, error) {
	tasksCtx, cancelTasks := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelTasks()
	n := len(r.plan.Order) // sized once: growing maps of 20,000 entries rehashes them
	c := &coordinator{Runner: r, tasksCtx: tasksCtx,
		events: make(chan any, 2*r.opts.Parallelism+16), waiting: make(map[string]int, n),
		final: make(map[string]bool, n), started: map[string]time.Time{},
		reportAt: map[string]time.Duration{}, runningOf: map[*config.Task]int{}, held: map[*config.Task]*readyQueue{},
		backoff: map[string]*time.Timer{}}
	c.walk = &Walk{c: c}
	c.cancel = cancelTasks
	c.lease, _ = r.opts.Store.(Leaser)
	c.values = r.shape.Op.Values(r.plan)
	c.stored = &stored{Checkpointer: r.opts.Store, recs: make(map[string]*state.Instance, n)}
	c.commit = newCommitter(c.stored, r.opts.RunID, c.events)
	c.recordPending()
	for _, addr := range r.shape.Order {
		c.waiting[addr] = r.waitsFor(addr)
		if c.waiting[addr] == 0 {
			c.push(r.plan.Instances[addr], 1)
		}
	}
	ticker := time.NewTicker(r.opts.ProgressEvery)
	defer ticker.Stop()
	done := ctx.Done()
	for {
		// No new work without a confirmed lock: an attempt starts only while the store's
		// lease is held (c.leased asks for a confirmation when it is not).
		for !c.stopping && c.running < r.opts.Parallelism && len(c.ready) > 0 && c.leased() {
			q := heap.Pop(&c.ready).(queued)
			if c.atBound(q) {
				continue
			}
			c.start(q.inst, q.attempt)
		}
		if c.running == 0 && len(c.backoff) == 0 && c.inflight == 0 && (c.stopping || len(c.ready) == 0) {
			break
		}
		select {
		case <-done:
			done = nil
			c.interrupted, c.stopping = true, r.shape.Op.StopsOnInterrupt()
			cancelTasks() // exec'd process groups get SIGTERM, then SIGKILL after a grace period
			c.abandonBackoffs(state.Interrupted)
		case ev := <-c.events:
			c.handle(ev)
			if c.fatal != nil {
				cancelTasks()
			}
		case <-ticker.C:
			c.progress()
		}
	}
	return c.finish()
}

// recordPending records the instances new to this run as pending (with the next
// commit), so `flow status` lists the whole plan from the start.
func (c *coordinator) recordPending() {
	for _, addr := range c.shape.Order {
		if _, resumed := c.opts.Previous[addr]; !resumed {
			c.commit.submit(c.records[addr], nil, false)
		}
	}
}

// atBound holds q aside when its task already runs max_parallel instances.
func (c *coordinator) atBound(q queued) bool {
	t := q.inst.Task
	if t.MaxParallel == 0 || c.runningOf[t] < t.MaxParallel {
		return false
	}
	if c.held[t] == nil {
		c.held[t] = &readyQueue{}
	}
	heap.Push(c.held[t], q)
	return true
}

// unbound lets the next held instance of t compete for a slot again, one per finished
// attempt, so a task of 20,000 instances at max_parallel 1 is not re-sorted each time.
func (c *coordinator) unbound(t *config.Task) {
	c.runningOf[t]--
	if h := c.held[t]; h != nil && h.Len() > 0 {
		heap.Push(&c.ready, heap.Pop(h).(queued))
	}
}

// push makes inst ready for its attempt.
func (c *coordinator) push(inst *plan.Instance, attempt int) {
	heap.Push(&c.ready, queued{inst, attempt, c.rank(inst)})
}

// start runs an attempt of inst on a worker, unless its operation settles it at once.
func (c *coordinator) start(inst *plan.Instance, attempt int) {
	if o := c.shape.Op.Settle(c.walk, inst); o != nil {
		c.end(o)
		return
	}
	c.running++
	c.runningOf[inst.Task]++
	c.started[inst.Addr] = time.Now()
	c.reportAt[inst.Addr] = c.opts.ProgressEvery
	ectx, diags := c.shape.Op.Context(c.walk, inst)
	go func() {
		// The worker checks the lease again just before it acts, since the process may
		// have been paused between the coordinator's check and here: if it is no longer
		// held, the attempt goes back to the coordinator unstarted.
		if c.lease != nil {
			if held, _ := c.lease.Lease(); !held {
				c.events <- unstarted{inst, attempt}
				return
			}
		}
		c.events <- performed{c.shape.Op.Perform(c.tasksCtx, c.walk, inst, attempt, ectx, diags)}
	}()
}

// end hands o to the operation's Finish; the instance has ended then, unless Finish
// asked for another attempt.
func (c *coordinator) end(o Outcome) {
	c.shape.Op.Finish(c.walk, o)
	if addr := o.Instance().Addr; c.backoff[addr] == nil {
		c.final[addr] = true
	}
}

func (c *coordinator) handle(ev any) {
	switch ev := ev.(type) {
	case performed:
		inst := ev.Instance()
		c.running--
		c.unbound(inst.Task)
		delete(c.started, inst.Addr)
		delete(c.reportAt, inst.Addr)
		c.end(ev.Outcome)
	case committed:
		c.inflight -= len(ev.addrs)
		var fe *state.FencedError
		if errors.As(ev.err, &fe) {
			c.takenOver(ev.err)
			return
		}
		if ev.err != nil {
			c.fatal, c.stopping = fmt.Errorf("write checkpoint: %w", ev.err), true
			c.abandonBackoffs(state.Failed)
			return
		}
		for _, addr := range ev.addrs {
			c.release(addr)
		}
	case unstarted:
		c.running--
		c.unbound(ev.inst.Task)
		delete(c.started, ev.inst.Addr)
		delete(c.reportAt, ev.inst.Addr)
		c.push(ev.inst, ev.attempt) // ready again: it starts once the lease is confirmed
	case leaseChecked:
		c.confirming = false
		var fe *state.FencedError
		switch {
		case errors.As(ev.err, &fe):
			c.takenOver(ev.err)
		case ev.err != nil && c.fatal == nil:
			c.fatal, c.stopping = fmt.Errorf("confirm the state's lock: %w", ev.err), true
			c.abandonBackoffs(state.Failed)
		}
	case retryDue:
		if _, ok := c.backoff[ev.inst.Addr]; ok { // gone if abandoned meanwhile
			delete(c.backoff, ev.inst.Addr)
			c.push(ev.inst, ev.attempt)
		}
	}
}

// leased reports whether the store's lock is confirmed, so that an attempt may start.
// While it is in doubt one ConfirmLease runs (its outcome comes back as leaseChecked,
// and the walk tries again then); once it is lost the walk stops (takenOver).
func (c *coordinator) leased() bool {
	if c.lease == nil {
		return true
	}
	held, lost := c.lease.Lease()
	switch {
	case lost != nil:
		c.takenOver(lost)
		return false
	case held:
		return true
	}
	if !c.confirming {
		c.confirming = true
		go func() { c.events <- leaseChecked{c.lease.ConfirmLease()} }()
	}
	return false
}

// takenOver stops the walk as a Ctrl-C would, and says so at once, when another writer
// took the state over: nothing more starts, running attempts are cancelled and what
// waits out a retry ends interrupted; the walk's error is err.
func (c *coordinator) takenOver(err error) {
	var fe *state.FencedError
	if errors.As(c.fatal, &fe) {
		return // said already
	}
	c.fatal, c.stopping = err, true
	c.say("%v: stopping the running tasks, starting nothing more", err)
	c.cancel() // exec'd process groups get SIGTERM, then SIGKILL after a grace period
	c.abandonBackoffs(state.Interrupted)
}

// release lets what waits for addr in the walk start once all it waits for is durable.
func (c *coordinator) release(addr string) {
	for _, dep := range c.next(addr) {
		if c.waiting[dep]--; c.waiting[dep] == 0 && !c.final[dep] {
			c.push(c.plan.Instances[dep], 1)
		}
	}
}

// skipDependents marks everything downstream of a failed instance as skipped, each
// naming the dependency it waited for.
func (c *coordinator) skipDependents(failed string) {
	queue := []string{failed}
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		for _, dep := range c.plan.Dependents(cur) {
			if c.final[dep] {
				continue
			}
			c.final[dep] = true
			reason := fmt.Sprintf("dependency %s failed", cur)
			if cur != failed {
				reason = fmt.Sprintf("dependency %s was skipped (%s failed)", cur, failed)
			}
			rec := c.update(dep, func(rec *state.Instance) {
				rec.Status, rec.Error, rec.Reason = state.Skipped, reason, reason
			})
			c.commit.submit(rec, nil, false)
			c.say("%s: skipped: %s", dep, reason)
			queue = append(queue, dep)
		}
	}
}

// abandonBackoffs ends the instances waiting out a retry delay when the run stops:
// interrupted on a signal, failed with their last error otherwise.
func (c *coordinator) abandonBackoffs(status state.Status) {
	for addr, t := range c.backoff {
		t.Stop()
		delete(c.backoff, addr)
		c.final[addr] = true
		rec := c.update(addr, func(rec *state.Instance) {
			now := time.Now().UTC()
			rec.Status, rec.FinishedAt = status, &now
		})
		c.commit.submit(rec, c.captures[addr].bytes(), false)
		if status == state.Failed {
			c.skipDependents(addr)
		}
	}
}

func (c *coordinator) progress() {
	if c.opts.Live {
		return
	}
	now := time.Now()
	for _, addr := range c.plan.Order {
		began, ok := c.started[addr]
		if !ok || now.Sub(began) < c.reportAt[addr] {
			continue
		}
		// Each instance's next line comes after twice the time so far: a long build
		// says it is alive without nine builds filling the log every 10 s.
		c.reportAt[addr] = 2 * now.Sub(began)
		line := fmt.Sprintf("%s: still running (%s elapsed)", addr, now.Sub(began).Round(time.Second))
		if last := c.LastLine(addr); last != "" {
			line += ": " + cut(last, 120)
		}
		c.say("%s", line)
	}
}

// backoffDelay is exponential with equal jitter: half the step is fixed, half random.
func backoffDelay(base, limit time.Duration, attempt int) time.Duration {
	d := base
	for i := 1; i < attempt && d < limit; i++ {
		d *= 2
	}
	d = min(d, limit)
	return d/2 + time.Duration(rand.Int64N(int64(d/2)+1))
}

// finish marks what never started, flushes checkpoints and evaluates outputs.
func (c *coordinator) finish() (*Result, error) {
	reason := ""
	if c.opts.FailFast && c.firstFailure != "" && !c.interrupted {
		reason = fmt.Sprintf("not started: --fail-fast after %s failed", c.firstFailure)
	}
	for _, addr := range c.plan.Order {
		if c.final[addr] || reason == "" {
			continue
		}
		rec := c.update(addr, func(rec *state.Instance) {
			rec.Status, rec.Error, rec.Reason = state.Skipped, reason, reason
		})
		c.commit.submit(rec, nil, false)
	}
	drained := make(chan struct{})
	go func() { // the committer may still report while it drains
		for {
			select {
			case <-c.events:
			case <-drained:
				return
			}
		}
	}()
	res := c.result()
	// The run's final record goes out with the last instance records: one commit, not
	// two, at the end of every run. After a fatal error the caller records the failure.
	var final *state.Run
	if c.opts.Finish != nil && c.fatal == nil {
		final = c.opts.Finish(res)
	}
	err := c.commit.close(final)
	close(drained)
	if c.fatal != nil {
		err = c.fatal
	} else if err != nil {
		err = fmt.Errorf("write checkpoint: %w", err)
	}
	if err != nil {
		c.asStored(res)
	}
	return res, errors.Join(err)
}

// asStored makes res's records what the state holds after a checkpoint failed: an
// instance's last durable record, else its record from before the walk, else pending.
// A success that could not be committed is not counted as one; a record left running
// counts as interrupted, as the ended run shows it.
func (c *coordinator) asStored(res *Result) {
	c.stored.mu.Lock()
	defer c.stored.mu.Unlock()
	for i, rec := range res.Records {
		var cp state.Instance
		switch got, prev := c.stored.recs[rec.Address], c.opts.Previous[rec.Address]; {
		case got != nil:
			cp = *got
		case prev != nil:
			cp = *prev
		default:
			cp = *rec
			cp.Status = state.Pending
		}
		if cp.Status == state.Running {
			cp.Status = state.Interrupted
		}
		res.Records[i] = &cp
	}
}

// result is the walk's outcome from the records as they stand, judged by its
// operation; finish commits them.
func (c *coordinator) result() *Result {
	res := &Result{Status: state.Succeeded, FirstFailure: c.firstFailure}
	for _, rec := range c.Snapshot() {
		cp := rec
		res.Records = append(res.Records, &cp)
	}
	c.shape.Op.Judge(c.walk, res)
	return res
}

// cut shortens a task's output line for a progress line.
func cut(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
