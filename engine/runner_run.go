package engine

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"github.com/hashicorp/hcl/v2"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/zclconf/go-cty/cty"

	"github.com/flowdev/flow/engine/config"
	"github.com/flowdev/flow/engine/state"
)

// queued is an instance ready to start its next attempt.
type queued struct {
	inst    *Instance
	attempt int
	rank    int // Runner.rank
}

// readyQueue starts instances by rank, whatever order they became ready in: a run in
// plan order, so `flow plan` shows the order a run starts them in.
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

// coordinator is the state of one Run, owned by the Run goroutine alone: the one
// walker, of a plan's graph for a run and of its reverse for a destroy (undo.go).
// Workers only run one attempt and report back; they never wait on dependencies or
// hold a slot while waiting, so a slot is busy exactly while a task's Run (or
// Destroy) is.
type coordinator struct {
	*Runner
	tasksCtx context.Context
	events   chan any
	commit   *committer

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
	upToDate     int
}

// Run walks the plan in its shape. A run: ready instances start in plan order up to the
// parallelism bound, each success is durable before its dependents start, a failure
// skips its dependents, and cancelling ctx interrupts running tasks. A destroy (a walker
// from NewDestroyer): each instance the undone run started is undone once everything
// that depends on it has had its turn (independent ones at once, up to the bound,
// latest in plan order first); an instance that could not be destroyed keeps what it
// depends on, and cancelling ctx interrupts running undos and keeps everything not yet
// undone. Each
// result is checkpointed, so an interrupted walk continues where it stopped. The error
// is non-nil only when checkpoints could not be written (then nothing new starts);
// task failures are in the Result.
func (r *Runner) Run(ctx context.Context) (*Result, error) {
	tasksCtx, cancelTasks := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelTasks()
	n := len(r.plan.Order) // sized once: growing maps of 20,000 entries rehashes them
	c := &coordinator{Runner: r, tasksCtx: tasksCtx,
		events: make(chan any, 2*r.opts.Parallelism+16), waiting: make(map[string]int, n),
		final: make(map[string]bool, n), started: map[string]time.Time{},
		reportAt: map[string]time.Duration{}, runningOf: map[*config.Task]int{}, held: map[*config.Task]*readyQueue{},
		backoff: map[string]*time.Timer{}}
	c.values = r.shape.op.values(r.plan)
	c.commit = newCommitter(r.opts.Store, r.opts.RunID, c.events)
	c.recordPending()
	for _, addr := range r.shape.order {
		c.waiting[addr] = r.waitsFor(addr)
		if c.waiting[addr] == 0 {
			c.push(r.plan.Instances[addr], 1)
		}
	}
	ticker := time.NewTicker(r.opts.ProgressEvery)
	defer ticker.Stop()
	done := ctx.Done()
	for {
		for !c.stopping && c.running < r.opts.Parallelism && len(c.ready) > 0 {
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
			c.interrupted, c.stopping = true, r.shape.op.stopsOnInterrupt()
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
	for _, addr := range c.shape.order {
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
func (c *coordinator) push(inst *Instance, attempt int) {
	heap.Push(&c.ready, queued{inst, attempt, c.rank(inst)})
}

// start runs an attempt of inst on a worker, unless its operation settles it at once.
func (c *coordinator) start(inst *Instance, attempt int) {
	if res := c.shape.op.settle(c, inst); res != nil {
		c.shape.op.finish(c, res)
		return
	}
	c.running++
	c.runningOf[inst.Task]++
	c.started[inst.Addr] = time.Now()
	c.reportAt[inst.Addr] = c.opts.ProgressEvery
	ectx, diags := c.shape.op.context(c, inst)
	go func() { c.events <- c.shape.op.perform(c.tasksCtx, c, inst, attempt, ectx, diags) }()
}

// valuesContext is inst's evaluation context over the values of the instances that
// finished so far.
func (c *coordinator) valuesContext(inst *Instance) (*hcl.EvalContext, hcl.Diagnostics) {
	return c.plan.EvalContext(inst, func(addr string) cty.Value { return c.values[addr] })
}

func (c *coordinator) handle(ev any) {
	switch ev := ev.(type) {
	case *attemptResult:
		c.running--
		c.unbound(ev.inst.Task)
		delete(c.started, ev.inst.Addr)
		delete(c.reportAt, ev.inst.Addr)
		c.shape.op.finish(c, ev)
	case committed:
		c.inflight -= len(ev.addrs)
		if ev.err != nil {
			c.fatal, c.stopping = fmt.Errorf("write checkpoint: %w", ev.err), true
			c.abandonBackoffs(state.Failed)
			return
		}
		for _, addr := range ev.addrs {
			c.release(addr)
		}
	case retryDue:
		if _, ok := c.backoff[ev.inst.Addr]; ok { // gone if abandoned meanwhile
			delete(c.backoff, ev.inst.Addr)
			c.push(ev.inst, ev.attempt)
		}
	}
}

// release lets what waits for addr in the walk start once all it waits for is durable.
func (c *coordinator) release(addr string) {
	for _, dep := range c.next(addr) {
		if c.waiting[dep]--; c.waiting[dep] == 0 && !c.final[dep] {
			c.push(c.plan.Instances[dep], 1)
		}
	}
}

// keepValue keeps a finished instance's value for what reads it; an instance no
// expression reads has none (see config.Task.Read), and keeping nothing for it keeps
// a long run's heap from growing with every success.
func (c *coordinator) keepValue(addr string, v cty.Value) {
	if v != cty.NilVal {
		c.values[addr] = v
	}
}

func (c *coordinator) finishAttempt(res *attemptResult) {
	addr := res.inst.Addr
	elapsed := round(res.finished.Sub(res.began))
	switch res.kind {
	case outcomeUpToDate:
		c.final[addr] = true
		c.keepValue(addr, res.value)
		c.upToDate++
		prev := c.opts.Previous[addr]
		rec := c.update(addr, func(rec *state.Instance) {
			*rec = *prev
			rec.Reason = "up to date: " + res.reason
			rec.Deps, rec.DepsKnown = res.inst.Deps, true
		})
		if !prev.DepsKnown || !slices.Equal(prev.Deps, rec.Deps) { // the graph changed around it: this run's edges
			c.commit.submit(rec, nil, false)
		}
		c.say("%s: up to date (%s)", addr, res.reason)
		c.release(addr) // its record is already durable
	case outcomeSucceeded:
		c.final[addr] = true
		c.keepValue(addr, res.value)
		rec := c.update(addr, func(rec *state.Instance) {
			rec.Status, rec.FinishedAt, rec.Error, rec.Reason = state.Succeeded, timePtr(res.finished), "", res.reason
			rec.Redacted = res.redacted
		})
		// Outputs and hashes go to the state file only: the record kept in memory (for
		// status and the summary) would otherwise grow a long run's heap with every success.
		rec.Outputs, rec.Fingerprint, rec.AttrHashes = res.stored, res.fingerprint, res.attrHashes
		rec.Inputs, rec.Withheld, rec.Retain = res.inputs, res.withheld, res.inst.Task.RetainOnDestroy
		rec.Dir, rec.Group, rec.GroupStart = c.opts.Dir, 0, 0
		if res.inputs != nil { // it can be undone: once the flow drops it, in dependency order
			rec.Deps, rec.DepsKnown = res.inst.Deps, true
		}
		// Only dependents must wait for the record to be durable; a leaf's success rides
		// along with the next commit (a kill before then runs it again on resume).
		wait := len(c.plan.Dependents(addr)) > 0
		if wait {
			c.inflight++
		}
		c.commit.submit(rec, c.captures[addr].bytes(), wait)
		c.say("%s: succeeded in %s", addr, elapsed)
	case outcomeInterrupted:
		c.final[addr] = true
		rec := c.update(addr, func(rec *state.Instance) {
			rec.Status, rec.FinishedAt, rec.Error = state.Interrupted, timePtr(res.finished), "interrupted"
		})
		c.commit.submit(rec, c.captures[addr].bytes(), false)
		c.say("%s: interrupted after %s", addr, elapsed)
	case outcomeFailed:
		c.failed(res, elapsed)
	}
}

func (c *coordinator) failed(res *attemptResult, elapsed time.Duration) {
	addr := res.inst.Addr
	msg := c.plan.Scope.Redact(res.err.Error())
	if res.retryable && res.attempt < res.retry.Attempts && !c.stopping {
		delay := backoffDelay(res.retry.Delay, res.retry.MaxDelay, res.attempt)
		c.say("%s: attempt %d of %d failed in %s: %s%s", addr, res.attempt, res.retry.Attempts, elapsed, msg, retryNote(addr, msg, round(delay)))
		c.update(addr, func(rec *state.Instance) { rec.Error = msg })
		inst, next := res.inst, res.attempt+1
		c.backoff[addr] = time.AfterFunc(delay, func() { c.events <- retryDue{inst: inst, attempt: next} })
		return
	}
	c.final[addr] = true
	if c.firstFailure == "" {
		c.firstFailure = addr
	}
	rec := c.update(addr, func(rec *state.Instance) {
		rec.Status, rec.FinishedAt, rec.Error = state.Failed, timePtr(res.finished), msg
	})
	c.commit.submit(rec, c.captures[addr].bytes(), false)
	c.say("%s: failed in %s: %s", addr, elapsed, msg)
	c.skipDependents(addr)
	if c.opts.FailFast {
		c.stopping = true
		c.abandonBackoffs(state.Failed)
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
			rec.Status, rec.FinishedAt = status, timePtr(time.Now())
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
	return res, errors.Join(err)
}

// result is the walk's outcome from the records as they stand, judged by its
// operation; finish commits them.
func (c *coordinator) result() *Result {
	res := &Result{Status: state.Succeeded, FirstFailure: c.firstFailure, UpToDate: c.upToDate}
	for _, rec := range c.Snapshot() {
		cp := rec
		res.Records = append(res.Records, &cp)
	}
	c.shape.op.judge(c, res)
	return res
}

// cut shortens a task's output line for a progress line.
func cut(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
