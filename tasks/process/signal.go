package process

import (
	"context"
	"fmt"
	"io"
	"strings"
	"syscall"
	"time"

	"github.com/flowdev/flow/tasks/internal/progress"
)

// Tests shorten these.
var (
	// pollEvery is how often a stop checks whether the process is gone.
	pollEvery = 50 * time.Millisecond
	// killWait is how long a process may take to disappear after SIGKILL.
	killWait = 5 * time.Second
)

// signals are the values the signal attribute accepts, without the SIG prefix.
var signals = map[string]syscall.Signal{
	"HUP": syscall.SIGHUP, "INT": syscall.SIGINT, "QUIT": syscall.SIGQUIT, "KILL": syscall.SIGKILL,
	"TERM": syscall.SIGTERM, "USR1": syscall.SIGUSR1, "USR2": syscall.SIGUSR2,
}

// parseSignal accepts "TERM", "SIGTERM" and lower-case spellings.
func parseSignal(name string) (syscall.Signal, bool) {
	sig, ok := signals[strings.TrimPrefix(strings.ToUpper(name), "SIG")]
	return sig, ok
}

// stop sends sig to the process rec names, which the caller found running, waits up to
// timeout for it to exit, then sends SIGKILL. A process that leads its own process
// group (as every process the process task starts does) is signalled with its whole
// group, so the children of a wrapper script stop too.
func stop(ctx context.Context, out io.Writer, rec record, sig syscall.Signal, timeout time.Duration) error {
	started := time.Now()
	fmt.Fprintf(out, "stopping %s with %s (up to %s)\n", rec.label(), signalName(sig), timeout)
	if err := signal(rec, sig); err != nil {
		return err
	}
	gone, err := waitGone(ctx, rec, timeout)
	if err != nil || gone {
		if gone {
			fmt.Fprintf(out, "%s stopped after %s\n", rec.label(), progress.RoundElapsed(time.Since(started)))
		}
		return err
	}
	fmt.Fprintf(out, "%s still runs after %s; sending SIGKILL\n", rec.label(), timeout)
	if err := signal(rec, syscall.SIGKILL); err != nil {
		return err
	}
	if gone, err = waitGone(ctx, rec, killWait); err != nil {
		return err
	}
	if !gone {
		return fmt.Errorf("stop %s: still running %s after SIGKILL", rec.label(), killWait)
	}
	fmt.Fprintf(out, "%s killed after %s\n", rec.label(), progress.RoundElapsed(time.Since(started)))
	return nil
}

// signal sends sig to rec's process group if it leads one, else to the process. It
// checks again that the pid is still rec's process right before, so a pid that was
// reused meanwhile is never signalled.
func signal(rec record, sig syscall.Signal) error {
	info, err := inspect(rec.PID)
	if err != nil {
		return fmt.Errorf("stop %s: %w", rec.label(), err)
	}
	if !rec.matches(info) {
		return nil // gone already
	}
	target := rec.PID
	if info.Group == rec.PID {
		target = -rec.PID
	}
	if err := syscall.Kill(target, sig); err != nil && err != syscall.ESRCH {
		return fmt.Errorf("stop %s: send %s: %w", rec.label(), signalName(sig), err)
	}
	return nil
}

// waitGone polls until rec's process is gone (true), limit passes (false) or ctx ends.
func waitGone(ctx context.Context, rec record, limit time.Duration) (bool, error) {
	deadline := time.NewTimer(limit)
	defer deadline.Stop()
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	for {
		info, err := inspect(rec.PID)
		if err != nil {
			return false, fmt.Errorf("stop %s: %w", rec.label(), err)
		}
		if !rec.matches(info) {
			return true, nil
		}
		select {
		case <-ctx.Done():
			return false, fmt.Errorf("stop %s: %w", rec.label(), ctx.Err())
		case <-deadline.C:
			return false, nil
		case <-tick.C:
		}
	}
}

func signalName(sig syscall.Signal) string {
	for name, s := range signals {
		if s == sig {
			return "SIG" + name
		}
	}
	return sig.String()
}
