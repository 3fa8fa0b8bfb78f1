package wait

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/flowdev/flow/tasks"
	"github.com/flowdev/flow/tasks/internal/progress"
)

// progressEvery is how often a wait reports that it is still waiting; tests shorten it.
var progressEvery = 10 * time.Second

type checkResult struct {
	ready bool
	state string
	err   error
	cut   bool // the wait's own end cut the check short
}

// waiter is one wait in progress: what it waits for, where it reports, what it saw.
type waiter struct {
	what  string
	out   io.Writer
	start time.Time
	last  string // state of the last finished check
}

// poll runs p every t.interval until it is ready, t.wait passes or ctx is cancelled,
// printing progress to env.Stdout, and returns how long it took. Checks run one at a
// time in a goroutine so progress and cancellation never wait for a slow check.
func poll(ctx context.Context, env *tasks.Env, what string, p probe, t timing) (time.Duration, error) {
	w := &waiter{what: what, out: env.Stdout, start: time.Now()}
	if w.out == nil {
		w.out = io.Discard
	}
	fmt.Fprintf(w.out, "waiting for %s (up to %s, checking every %s)\n", what, t.wait, t.interval)
	waitCtx, cancel := context.WithTimeout(ctx, t.wait)
	defer cancel()
	ticker := time.NewTicker(progressEvery)
	defer ticker.Stop()
	next := time.NewTimer(0)
	defer next.Stop()

	results := make(chan checkResult, 1)
	inFlight := false
	var checkStart time.Time
	for {
		select {
		case <-next.C:
			inFlight, checkStart = true, time.Now()
			go func() { results <- checkOnce(waitCtx, p, t.request) }()
		case <-ticker.C:
			fmt.Fprintf(w.out, "still waiting for %s (%s, last: %s)\n", what, progress.RoundElapsed(time.Since(w.start)), w.lastState())
		case r := <-results:
			inFlight = false
			w.saw(r)
			if r.ready || r.err != nil || waitCtx.Err() != nil {
				return w.end(ctx, r, t.wait)
			}
			next.Reset(max(0, t.interval-time.Since(checkStart)))
		case <-waitCtx.Done():
			var r checkResult
			if inFlight { // it returns promptly: its context is done too
				r = <-results
				w.saw(r)
			}
			return w.end(ctx, r, t.wait)
		}
	}
}

// saw records the state of a finished check; a check cut short by the end of the wait
// says less than a complete one before it.
func (w *waiter) saw(r checkResult) {
	if r.state != "" && !(r.cut && w.last != "") {
		w.last = r.state
	}
}

func (w *waiter) lastState() string {
	if w.last == "" {
		return "no check finished"
	}
	return w.last
}

// end turns the check that ended the wait into its result: cancellation wins, then a
// permanent error, then readiness; otherwise the wait timed out.
func (w *waiter) end(ctx context.Context, r checkResult, limit time.Duration) (time.Duration, error) {
	elapsed := time.Since(w.start)
	switch {
	case ctx.Err() != nil:
		return elapsed, fmt.Errorf("wait for %s: %w", w.what, ctx.Err())
	case r.err != nil:
		return elapsed, fmt.Errorf("wait for %s: %w", w.what, r.err)
	case r.ready:
		fmt.Fprintf(w.out, "%s ready after %s\n", w.what, progress.RoundElapsed(elapsed))
		return elapsed, nil
	default:
		return elapsed, fmt.Errorf("wait for %s: not ready after %s: last %s", w.what, limit, w.lastState())
	}
}

// checkOnce runs one check bounded by limit; a check cut off by a deadline is
// described by how long it went unanswered rather than by the context's error.
func checkOnce(ctx context.Context, p probe, limit time.Duration) checkResult {
	checkCtx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	start := time.Now()
	ready, state, err := p.check(checkCtx)
	if !ready && err == nil && checkCtx.Err() == context.DeadlineExceeded {
		state = "no answer within " + progress.RoundElapsed(time.Since(start)).String()
	}
	// A dial's own deadline can expire a moment before ctx reports it, and client-go's
	// rate limiter refuses a request at once when its wait would pass the deadline:
	// both are the wait's end cutting the check short too.
	deadline, hasDeadline := ctx.Deadline()
	cut := ctx.Err() != nil || (hasDeadline && !time.Now().Before(deadline)) ||
		strings.Contains(state, "would exceed context deadline")
	return checkResult{ready: ready, state: state, err: err, cut: cut}
}
