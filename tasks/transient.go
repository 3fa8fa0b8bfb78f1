package tasks

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"
	"time"

	"github.com/flowdev/flow/tasks/internal/progress"
)

// DefaultTransientRetry is how long a task keeps retrying transient faults when
// Env.TransientRetry is 0: long enough for a restarting LXD daemon or API server
// (seconds) and short enough that a server that stays down fails the run.
const DefaultTransientRetry = time.Minute

// transientWaits is the backoff between attempts: doubling from the first, capped
// at the last; every wait also stays within the bound.
var transientWaits = struct{ first, cap time.Duration }{250 * time.Millisecond, 4 * time.Second}

// Classifier names the transient fault err is, or returns "" when err is not
// transient (not found, forbidden, invalid: repeating cannot help).
type Classifier func(err error) string

// TransientFault is the classifier of faults every network client meets: the
// server closed or reset the connection, refused it or had no socket while
// restarting, or did not answer in time. Task families with their own protocol
// errors (HTTP statuses, API status codes) wrap it; see kube.TransientFault.
func TransientFault(err error) string {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return ""
	}
	var nerr net.Error
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ECONNRESET):
		return "connection reset"
	case errors.Is(err, syscall.EPIPE):
		return "broken pipe"
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return "connection closed (EOF)"
	case isMissingSocket(err):
		return "socket missing"
	case errors.As(err, &nerr) && nerr.Timeout():
		return "timeout"
	}
	return textFault(err.Error())
}

// isMissingSocket reports a dial of a unix socket that does not exist (yet): a
// daemon between stopping and listening again.
func isMissingSocket(err error) bool {
	var oe *net.OpError
	return errors.As(err, &oe) && oe.Op == "dial" && oe.Net == "unix" &&
		(errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ECONNREFUSED))
}

// textFaults are the words of transient faults that reach us only as text: some
// clients (LXD's among them) flatten the errors of their websockets and of
// requests they make on their own into strings.
var textFaults = []struct{ text, fault string }{
	{"connection refused", "connection refused"},
	{"connection reset by peer", "connection reset"},
	{"broken pipe", "broken pipe"},
	{"use of closed network connection", "connection closed"},
	{"websocket: close 1006", "websocket dropped"},
	{"unexpected EOF", "connection closed (EOF)"},
	{"i/o timeout", "timeout"},
	{"TLS handshake timeout", "timeout"},
}

func textFault(msg string) string {
	for _, f := range textFaults {
		if strings.Contains(msg, f.text) {
			return f.fault
		}
	}
	if strings.HasSuffix(msg, ": EOF") || msg == "EOF" {
		return "connection closed (EOF)"
	}
	if strings.Contains(msg, "dial unix") && strings.Contains(msg, "no such file or directory") {
		return "socket missing"
	}
	return ""
}

// RetryTransient runs attempt until it succeeds, fails with an error classify does
// not call transient, or env's transient bound (Env.TransientRetry) would pass
// before the next attempt; then it returns attempt's last error. Before each retry
// it prints one line to env.Stderr naming the fault and the wait. attempt must be
// safe to repeat: every task's Run is (it is idempotent), and so is a read or an
// idempotent request.
func RetryTransient[T any](ctx context.Context, env *Env, classify Classifier, attempt func() (T, error)) (T, error) {
	bound := env.transientBound()
	start := time.Now()
	wait := transientWaits.first
	for n := 1; ; n++ {
		v, err := attempt()
		if err == nil || ctx.Err() != nil || bound <= 0 {
			return v, err
		}
		fault := classify(err)
		if fault == "" {
			return v, err
		}
		used := time.Since(start)
		if used+wait > bound {
			return v, fmt.Errorf("%w (a transient fault, %s; retried for %s, the bound)", err, fault, progress.RoundElapsed(used))
		}
		if env.Stderr != nil {
			fmt.Fprintf(env.Stderr, "transient fault: %s; retry %d in %s (%s of %s used)\n",
				fault, n, progress.RoundElapsed(wait), progress.RoundElapsed(used), bound)
		}
		select {
		case <-ctx.Done():
			return v, err
		case <-time.After(wait):
		}
		wait = min(2*wait, transientWaits.cap)
	}
}

// transientBound is Env.TransientRetry with its zero value resolved.
func (e *Env) transientBound() time.Duration {
	switch {
	case e == nil || e.TransientRetry == 0:
		return DefaultTransientRetry
	case e.TransientRetry < 0:
		return 0
	}
	return e.TransientRetry
}
