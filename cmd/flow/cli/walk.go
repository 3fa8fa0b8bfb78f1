package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/flowdev/flow/engine"
)

// walkCall is one walk a command asks the engine for — a run, a resume or a destroy —
// with what differs between them; CLI.walk does the steps they share.
type walkCall struct {
	vars         varFlags
	progress     progressFlag
	parallelism  int
	continueWith string // the command that continues an interrupted walk
	failed       string // the message of a failure the summary already reported
	// set fills the command's own fields of the request; do asks the session.
	set func(*engine.Request)
	do  func(*engine.Session, context.Context, engine.Request) (*engine.Outcome, error)
	// refused reports a walk that did not start; summary one that ended.
	refused func(error) error
	summary func(o *engine.Outcome, took time.Duration)
}

// walk builds the request (variables, output, the live view, the observer, signals),
// calls the session once, and maps how the walk ended to its summary and exit code.
// Signals are caught from the start: a Ctrl-C while the state opens or the flow loads
// must end in exit code 130 and a resumable state, not the default death.
func (c *CLI) walk(w walkCall) error {
	live, err := w.progress.live(c.stdout)
	if err != nil {
		return err
	}
	out, view := c.progressOut(live)
	ctx, stopSignals := c.interruptible(c.commandHint(w.continueWith), view)
	defer stopSignals()
	obs := &observer{cli: c, view: view, parallelism: w.parallelism}
	req := c.request(w.vars, out, live)
	req.Observer, req.Parallelism = obs, w.parallelism
	w.set(&req)
	o, err := w.do(engine.NewSession(c.state(), c.reg), ctx, req)
	view.close()
	if err != nil {
		return w.refused(err)
	}
	w.summary(o, time.Since(obs.began))
	return exitFor(o.Result, o.Err, w.failed, ctx.Err() != nil)
}

// exitFor maps how an execution (a run or a destroy) ended to its exit error;
// failed is the message of a failure the summary already reported. An interrupted
// walk exits 130 even when its state could not be written (an interrupt during a
// database outage): the error is shown, the code says the user stopped it.
func exitFor(res *engine.Result, runErr error, failed string, interrupted bool) error {
	switch {
	case runErr != nil && interrupted:
		return fail(ExitInterrupted, runErr)
	case runErr != nil:
		return fail(ExitTaskFailed, runErr)
	case res.Status == engine.Interrupted:
		return reported(ExitInterrupted, errors.New("interrupted"))
	case res.Status != engine.Succeeded:
		return reported(ExitTaskFailed, errors.New(failed))
	}
	return nil
}

// interruptible cancels the context on the first SIGINT or SIGTERM and exits at once
// on the second; every success was already committed, so nothing recorded is lost.
// continueWith is the command that continues afterwards. While a live view is drawn,
// what it says goes into the view, which keeps it on the screen; else to stderr.
func (c *CLI) interruptible(continueWith string, view *liveView) (context.Context, func()) {
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		if _, ok := <-sigs; !ok {
			return
		}
		msg := fmt.Sprintf("Interrupting: stopping running tasks (press Ctrl-C again to exit at once; %q continues)", continueWith)
		if !view.notify(msg) {
			fmt.Fprintln(c.stderr, "\n"+msg)
		}
		cancel()
		if _, ok := <-sigs; ok {
			msg := "Exiting at once; the tasks' processes were stopped."
			if left := engine.KillTasks(); len(left) > 0 {
				msg = fmt.Sprintf("Exiting at once; could not stop the process groups %v, which still run.", left)
			}
			if !view.leave(msg) {
				fmt.Fprintln(c.stderr, msg)
			}
			os.Exit(ExitInterrupted)
		}
	}()
	return ctx, func() { signal.Stop(sigs); close(sigs); cancel() }
}
