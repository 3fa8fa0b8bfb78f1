package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/flowdev/flow/engine"
	"github.com/flowdev/flow/tasks"
)

// execFlags are the flags of run and resume.
type execFlags struct {
	varFlags
	selectFlags
	progressFlag
	parallelism    int
	failFast       bool
	transientRetry time.Duration
	keepRemoved    bool // run only
	move           bool // run only
}

func (e *execFlags) add(cmd *cobra.Command) {
	e.varFlags.add(cmd)
	e.selectFlags.add(cmd)
	e.progressFlag.add(cmd)
	addParallelism(cmd, &e.parallelism, "how many task instances run at once (at least 1)")
	cmd.Flags().BoolVar(&e.failFast, "fail-fast", false, "start no new task after the first failure")
	cmd.Flags().DurationVar(&e.transientRetry, "transient-retry", tasks.DefaultTransientRetry,
		"how long each task retries transient faults (a restarting LXD daemon, API server or registry) on its own; 0 disables")
}

// addParallelism adds --parallelism (default 10) to cmd, and checks before the command
// runs that it is at least 1: 0 or less is a usage error naming the flag, on every
// command that takes it, before anything is opened or created.
func addParallelism(cmd *cobra.Command, p *int, usage string) {
	cmd.Flags().IntVar(p, "parallelism", 10, usage)
	cmd.PreRunE = func(cmd *cobra.Command, args []string) error {
		if *p < 1 {
			return failf(ExitInvalid, "--parallelism must be at least 1, got %d (see %s --help)", *p, cmd.CommandPath())
		}
		return nil
	}
}

// transientBound maps the flag to engine.Options.TransientRetry, where 0 means the default.
func (e *execFlags) transientBound() time.Duration {
	if e.transientRetry <= 0 {
		return -1
	}
	return e.transientRetry
}

func (c *CLI) runCmd() *cobra.Command {
	var f execFlags
	var fresh bool
	cmd := &cobra.Command{
		Use:   "run PATH",
		Short: "Run a flow from the start, checkpointing every finished task",
		Long: `Run every task of the flow at PATH (a .hcl file or a directory of them), in dependency
order and in parallel. Each finished task instance is checkpointed in the state file
before anything that depends on it starts. If the latest run in the state file did not
finish, run refuses: continue it with "flow resume" or start over with --new.

Exit codes: 0 success, 1 a task failed, 2 invalid flow or usage, 130 interrupted.`,
		Example: `  flow run flows/demo.hcl
  flow run flows/demo.hcl --parallelism 2 --var members='["a","b","c"]'
  flow run flows/lab.hcl --var-file lab.vars.hcl --fail-fast
  flow run flows/demo.hcl --new    # abandon an unfinished run and start over
  flow run flows/demo.hcl --move   # the project moved here: undo its old instances here too`,
		Args: exactArgs(1, "PATH"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return c.execute(args[0], f, fresh)
		},
	}
	f.add(cmd)
	cmd.Flags().BoolVar(&fresh, "new", false, "start a new run even if the latest one did not finish")
	cmd.Flags().BoolVar(&f.keepRemoved, "keep-removed", false,
		"leave the instances the state holds and the flow no longer has as they are, for a later run or destroy to undo")
	cmd.Flags().BoolVar(&f.move, "move", false,
		"run here although the state's instances were made in another directory (the project moved): their undo acts here too")
	return cmd
}

func (c *CLI) resumeCmd() *cobra.Command {
	var f execFlags
	cmd := &cobra.Command{
		Use:   "resume",
		Short: "Continue the latest unfinished run without redoing what succeeded",
		Long: `Continue the latest run in the state file that did not succeed, in the directory the
run was started in, wherever resume is called from. The flow is read again from the
path the run was started with (--flow PATH: from where it moved). An instance that
succeeded is skipped, with its recorded outputs restored, unless its evaluated inputs
changed (then it runs again, and the output says which inputs) or a refresh finds its
object drifted (an instance stopped, a file removed; --refresh=false trusts the
records). Everything else runs. Variables keep their recorded values unless set again
(one that took its default takes the flow's default as it is now); sensitive
variables are never recorded and must be given again.`,
		Example: `  flow resume
  flow resume --parallelism 4
  flow resume --var token=$TOKEN    # sensitive variables are not stored
  flow resume --flow new/place/main.hcl    # the flow file moved`,
		Args: exactArgs(0, ""),
		RunE: func(cmd *cobra.Command, args []string) error {
			return c.execute("", f, false)
		},
	}
	f.add(cmd)
	c.addMovedFlow(cmd)
	return cmd
}

// addMovedFlow adds --flow, for a run whose flow moved, to resume and destroy.
func (c *CLI) addMovedFlow(cmd *cobra.Command) {
	cmd.Flags().StringVar(&c.movedFlow, "flow", "",
		"where the run's flow is now, if it moved (its working directory follows it when the old one is gone)")
}

func exactArgs(n int, names string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		switch {
		case len(args) > n && n == 0:
			return failf(ExitInvalid, "%s takes no arguments; %s", cmd.CommandPath(), extraArgs(args))
		case len(args) > n:
			return failf(ExitInvalid, "%s takes %s only; %s (see --help)", cmd.CommandPath(), names, extraArgs(args[n:]))
		case len(args) < n:
			return failf(ExitInvalid, "%s needs %s (see --help)", cmd.CommandPath(), names)
		}
		return nil
	}
}

// extraArgs names the arguments a command does not take.
func extraArgs(extra []string) string {
	q := make([]string, len(extra))
	for i, a := range extra {
		q[i] = fmt.Sprintf("%q", a)
	}
	if len(q) == 1 {
		return "extra argument " + q[0]
	}
	return "extra arguments " + strings.Join(q, ", ")
}

// execute runs a flow: a new run of path, or, with path "", a resume of the latest run.
func (c *CLI) execute(path string, f execFlags, fresh bool) error {
	live, err := f.live(c.stdout)
	if err != nil {
		return err
	}
	if os.Getenv("GOGC") == "" && os.Getenv("GOMEMLIMIT") == "" {
		// A run is a batch process with a small live heap: trading some memory for less
		// garbage collection is measurable on runs of many tasks; the soft limit keeps
		// a run of tens of thousands of tasks from growing past it.
		debug.SetGCPercent(400)
		debug.SetMemoryLimit(192 << 20)
	}
	// Signals are caught from the start: a Ctrl-C while the state opens or the flow
	// loads must end in exit code 130 and a resumable state, not the default death.
	out, view := c.progressOut(live)
	ctx, stopSignals := c.interruptible(c.commandHint("flow resume"), view)
	defer stopSignals()
	obs := &observer{cli: c, view: view, parallelism: f.parallelism}
	req := c.request(f.varFlags, out, live)
	req.Observer = obs
	req.Flow, req.New, req.Targets, req.Replace = path, fresh, f.targetAddrs(), f.replaceAddrs()
	req.NoRefresh, req.KeepRemoved, req.Move = !f.refresh, f.keepRemoved, f.move
	req.Parallelism, req.FailFast, req.TransientRetry = f.parallelism, f.failFast, f.transientBound()
	sess := engine.NewSession(c.state(), c.reg)
	run := sess.Run
	if path == "" {
		run, req.Flow = sess.Resume, c.movedFlow
	}
	o, err := run(ctx, req)
	view.close()
	if err != nil {
		return c.refused(err)
	}
	c.summary(o.Run, o.Result, o.Walker, time.Since(obs.began), c.resumeHint(o.Loaded, f.varFlags))
	return exitFor(o.Result, o.Err, "run failed")
}

// exitFor maps how an execution (a run or a destroy) ended to its exit error;
// failed is the message of a failure the summary already reported.
func exitFor(res *engine.Result, runErr error, failed string) error {
	switch {
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

// displayPath is p relative to the caller's directory when it lies below it. The
// engine never changes the process's directory, so that is the working directory.
func displayPath(p string) string {
	if wd, err := os.Getwd(); err == nil {
		if rel, err := filepath.Rel(wd, p); err == nil && !filepath.IsAbs(rel) && len(rel) < len(p) && rel[0] != '.' {
			return rel
		}
	}
	return p
}
