package walk

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/zclconf/go-cty/cty"

	"github.com/flowdev/flow/engine/config"
	"github.com/flowdev/flow/engine/plan"
	"github.com/flowdev/flow/engine/state"
)

// Walk is what an operation is given of the walk it serves: the plan and options, the
// records and output the walk keeps, and how to end an instance. It is valid only
// during Run.
//
// Concurrency: Plan, Options, Say, Record, Update, Submit, Durable, Confirmed, Streams and Log may be
// called from any goroutine, a worker's Perform included. Every other method belongs
// to the walk's goroutine: call it only from the operation's Context, Settle, Finish
// and Judge.
type Walk struct{ c *coordinator }

// Plan is the plan walked; read it, never change it.
func (w *Walk) Plan() *plan.Plan { return w.c.plan }

// Options are the walk's options, defaults filled in; read them, never change them.
func (w *Walk) Options() *Options { return &w.c.opts }

// Say writes one line to the walk's output, redacting the plan's secrets.
func (w *Walk) Say(format string, args ...any) { w.c.say(format, args...) }

// Record is a copy of addr's record as the walk holds it now.
func (w *Walk) Record(addr string) *state.Instance {
	return w.c.update(addr, func(*state.Instance) {})
}

// Update changes addr's record under the walk's lock and returns a copy, for Submit or
// Commit. What Update changes is what Snapshot shows; it is durable only once
// submitted.
func (w *Walk) Update(addr string, f func(*state.Instance)) *state.Instance {
	return w.c.update(addr, f)
}

// Submit queues rec, with log as its instance's output when log is not nil, for the
// walk's next checkpoint; nobody waits for it to be durable.
func (w *Walk) Submit(rec *state.Instance, log []byte) { w.c.commit.submit(rec, log, false) }

// Durable queues rec for a checkpoint of its own, as Submit, and waits until it is
// durable: what an attempt records before it acts (the object it is about to make)
// must survive a kill during the act. It returns the checkpoint's error; the caller
// then must not act. It waits without the coordinator, so it may be called from a
// worker.
func (w *Walk) Durable(rec *state.Instance) error {
	if err := <-w.c.commit.durable(rec); err != nil {
		return err
	}
	return w.Confirmed()
}

// Confirmed reports, without I/O, whether the store's writer lock is confirmed now (a
// store whose lock cannot be lost always is): an attempt calls it last before it acts,
// since its process may have been paused since the walk started it, and does not act
// on an error.
func (w *Walk) Confirmed() error {
	if w.c.lease == nil {
		return nil
	}
	held, lost := w.c.lease.Lease()
	switch {
	case lost != nil:
		return lost
	case !held:
		return errLeaseInDoubt
	}
	return nil
}

var errLeaseInDoubt = errors.New("the state's writer lock is in doubt (not confirmed since this process was paused or its connection broke)")

// Log is the output captured so far for addr (redacted, its tail when long).
func (w *Walk) Log(addr string) []byte { return w.c.captures[addr].bytes() }

// Streams are where attempt n of addr writes: lines, redacted, kept for its log and,
// unless Options.Live, written to the walk's output prefixed with addr. An attempt
// after the first is marked in the log. Flush each when the attempt ends.
func (w *Walk) Streams(addr string, n int) (stdout, stderr *Stream) {
	capt := w.c.captures[addr]
	if n > 1 {
		capt.append([]byte(fmt.Sprintf("--- attempt %d ---\n", n)))
	}
	cons := w.c.console
	if w.c.opts.Live {
		cons = nil
	}
	redact := w.c.plan.Scope.Redact
	prefix := "[" + addr + "] "
	return &Stream{prefix: prefix, console: cons, capture: capt, redact: redact},
		&Stream{prefix: prefix, console: cons, capture: capt, redact: redact}
}

// Commit submits rec, as Submit, as the end of its instance: what waits for it in the
// walk starts once rec is durable.
func (w *Walk) Commit(rec *state.Instance, log []byte) {
	c := w.c
	wait := len(c.next(rec.Address)) > 0
	if wait {
		c.inflight++
	}
	c.commit.submit(rec, log, wait)
}

// Release lets what waits for addr in the walk start now: addr's record is durable
// already.
func (w *Walk) Release(addr string) { w.c.release(addr) }

// Values are the values of the instances that ended so far, by address, as their
// dependents read them; read them, never change them (see Keep).
func (w *Walk) Values() map[string]cty.Value { return w.c.values }

// Keep keeps addr's value for what reads it. NilVal keeps nothing: an instance no
// expression reads has no value (see config.Task.Read), and keeping nothing for it
// keeps a long walk's heap from growing with every instance.
func (w *Walk) Keep(addr string, v cty.Value) {
	if v != cty.NilVal {
		w.c.values[addr] = v
	}
}

// Retry asks for attempt n+1 of inst after a backoff when policy allows one more and
// the walk is not stopping: it says that attempt n failed after elapsed with msg,
// keeps msg as the record's error and the failed attempt in its Tries, and returns
// true. Call it from Finish; until the next attempt starts, the instance has not ended.
func (w *Walk) Retry(inst *plan.Instance, n int, policy config.RetryPolicy, elapsed time.Duration, msg string) bool {
	c := w.c
	if n >= policy.Attempts || c.stopping {
		return false
	}
	addr := inst.Addr
	delay := backoffDelay(policy.Delay, policy.MaxDelay, n)
	c.say("%s: attempt %d of %d failed in %s: %s%s", addr, n, policy.Attempts, elapsed, msg, retryNote(addr, msg, Round(delay)))
	c.update(addr, func(rec *state.Instance) {
		rec.Error = msg
		if rec.StartedAt != nil { // the attempt that failed, kept for the timeline
			rec.Tries = append(slices.Clip(rec.Tries), state.Try{StartedAt: *rec.StartedAt, FinishedAt: rec.StartedAt.Add(elapsed), Error: msg})
		}
	})
	c.backoff[addr] = time.AfterFunc(delay, func() { c.events <- retryDue{inst: inst, attempt: n + 1} })
	return true
}

// Failed notes that addr failed for good: the walk's first failure (Result.FirstFailure)
// unless one came before.
func (w *Walk) Failed(addr string) {
	if w.c.firstFailure == "" {
		w.c.firstFailure = addr
	}
}

// SkipDependents ends everything downstream of failed in the plan that has not ended
// as skipped, each naming the dependency it waited for.
func (w *Walk) SkipDependents(failed string) { w.c.skipDependents(failed) }

// Stop starts nothing more: instances waiting out a retry's backoff end as failed,
// and what depends on them is skipped. What runs goes on to its end.
func (w *Walk) Stop() {
	w.c.stopping = true
	w.c.abandonBackoffs(state.Failed)
}

// Interrupted reports whether the walk's context was cancelled.
func (w *Walk) Interrupted() bool { return w.c.interrupted }
