package lxd

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	lxdclient "github.com/canonical/lxd/client"

	"github.com/flowdev/flow/tasks"
)

// errOperationLost is what waiting for an operation ends with when LXD no longer
// knows it: the daemon restarted while it ran (operations live in its memory).
// Whether it took effect is unknown, so the task runs again, which is safe
// because every LXD task is idempotent.
var errOperationLost = errors.New("operation lost: the LXD daemon restarted while it ran")

// resultError marks what a command in an instance said (an exit code, a wait_for
// that never passed): its output may hold any words, "connection refused"
// included, and it is a result to report, never a fault to retry.
type resultError struct{ err error }

func (e *resultError) Error() string { return e.err.Error() }
func (e *resultError) Unwrap() error { return e.err }

// transientFault classifies LXD errors for tasks.RetryTransient: the network
// faults of a restarting daemon, and lost operations.
func transientFault(err error) string {
	var re *resultError
	switch {
	case errors.As(err, &re):
		return ""
	case errors.Is(err, errExecCut):
		return "exec killed when its LXD connection dropped"
	case errors.Is(err, errOperationLost):
		return "operation lost (LXD restarted)"
	case errors.Is(err, errLeftStopped):
		return "instance stopped while LXD was away"
	case strings.Contains(err.Error(), "Missing event connection with target cluster member"):
		// A member whose daemon restarted answers before the member we talk to has
		// joined its event stream again: a request about its instances is refused
		// for those seconds.
		return "cluster member reconnecting (it restarted)"
	}
	return tasks.TransientFault(err)
}

// retry runs a task's whole run again while it fails with a transient fault,
// within env's bound. Each run connects afresh, so a restarted daemon is met on
// a new connection, and finds what an earlier attempt created "already present".
func retry(ctx context.Context, env *tasks.Env, run func(context.Context, *tasks.Env) (tasks.Outputs, error)) (tasks.Outputs, error) {
	return tasks.RetryTransient(ctx, env, transientFault, func() (tasks.Outputs, error) { return run(ctx, env) })
}

// opPoll is how often an operation is re-read by its id once its event stream dropped.
const opPoll = 250 * time.Millisecond

// pollOperation re-reads op by its id until it is final, the daemon says it no
// longer knows it (errOperationLost) or ctx ends. A daemon that is down for a
// moment (refused, missing socket) is asked again.
func pollOperation(ctx context.Context, op lxdclient.Operation) error {
	for {
		err := op.Refresh()
		switch {
		case err == nil:
			if got := op.Get(); got.StatusCode.IsFinal() {
				if got.Err != "" {
					return errors.New(got.Err)
				}
				return nil
			}
		case isNotFound(err):
			return fmt.Errorf("operation %s: %w", op.Get().ID, errOperationLost)
		case transientFault(err) == "":
			return fmt.Errorf("read operation %s: %w", op.Get().ID, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(opPoll):
		}
	}
}
