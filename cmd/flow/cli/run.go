package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/zclconf/go-cty/cty"

	"github.com/flowdev/flow/engine"
	"github.com/flowdev/flow/engine/live"
	"github.com/flowdev/flow/engine/state"
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
}

func (e *execFlags) add(cmd *cobra.Command) {
	e.varFlags.add(cmd)
	e.selectFlags.add(cmd)
	e.progressFlag.add(cmd)
	cmd.Flags().IntVar(&e.parallelism, "parallelism", 10, "how many task instances run at once")
	cmd.Flags().BoolVar(&e.failFast, "fail-fast", false, "start no new task after the first failure")
	cmd.Flags().DurationVar(&e.transientRetry, "transient-retry", tasks.DefaultTransientRetry,
		"how long each task retries transient faults (a restarting LXD daemon, API server or registry) on its own; 0 disables")
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
  flow run flows/demo.hcl --new    # abandon an unfinished run and start over`,
		Args: exactArgs(1, "PATH"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return c.execute(args[0], f, fresh)
		},
	}
	f.add(cmd)
	cmd.Flags().BoolVar(&fresh, "new", false, "start a new run even if the latest one did not finish")
	return cmd
}

func (c *CLI) resumeCmd() *cobra.Command {
	var f execFlags
	cmd := &cobra.Command{
		Use:   "resume",
		Short: "Continue the latest unfinished run without redoing what succeeded",
		Long: `Continue the latest run in the state file that did not succeed. The flow is read again
from the path the run was started with: an instance that succeeded is skipped, with its
recorded outputs restored, unless its evaluated inputs changed (then it runs again, and
the output says which inputs). Everything else runs. Variables keep their recorded values
unless set again; sensitive variables are never recorded and must be given again.`,
		Example: `  flow resume
  flow resume --parallelism 4
  flow resume --var token=$TOKEN    # sensitive variables are not stored`,
		Args: exactArgs(0, ""),
		RunE: func(cmd *cobra.Command, args []string) error {
			return c.execute("", f, false)
		},
	}
	f.add(cmd)
	return cmd
}

func exactArgs(n int, names string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			if n == 0 {
				return fail(ExitInvalid, fmt.Errorf("%s takes no arguments", cmd.CommandPath()))
			}
			return fail(ExitInvalid, fmt.Errorf("%s needs %s (see --help)", cmd.CommandPath(), names))
		}
		return nil
	}
}

// execute runs a flow: a new run of path, or, with path "", a resume of the latest run.
func (c *CLI) execute(path string, f execFlags, fresh bool) error {
	if _, err := f.live(c.stdout); err != nil {
		return err
	}
	if os.Getenv("GOGC") == "" && os.Getenv("GOMEMLIMIT") == "" {
		// A run is a batch process with a small live heap: trading some memory for less
		// garbage collection is measurable on runs of many tasks; the soft limit keeps
		// a run of tens of thousands of tasks from growing past it.
		debug.SetGCPercent(400)
		debug.SetMemoryLimit(192 << 20)
	}
	var l *engine.Loaded
	var plan *engine.Plan
	var newRun func() (*state.Run, error)
	if path != "" {
		newRun = func() (*state.Run, error) {
			var err error
			if l, plan, err = c.loadSelected(path, f, nil); err != nil {
				return nil, err
			}
			run, err := engine.NewRunRecord(l)
			if err != nil {
				return nil, fail(ExitInvalid, err)
			}
			return run, nil
		}
	}
	sess, err := c.openSession(newRun)
	if err != nil {
		return err
	}
	defer sess.close()
	ctx, store, src, latest := sess.ctx, sess.store, sess.src, sess.latest
	if sess.created != nil {
		return c.runPlan(ctx, store, src, sess.created, l, plan, nil, f, "Starting")
	}
	var run *state.Run
	var previous map[string]*state.Instance
	var base map[string]cty.Value
	switch {
	case path == "" && latest == nil:
		return failf(ExitInvalid, "nothing to resume in %s: there are no runs yet; start one with \"flow run PATH\"", store.Path())
	case latest != nil && latest.Destroys != 0 && latest.Status != state.Succeeded:
		return failf(ExitInvalid, "the latest run (%d) destroys run %d and did not finish: it is %s; continue it with \"flow destroy\"",
			latest.ID, latest.Destroys, effectiveStatus(latest))
	case path == "" && latest.Destroys != 0:
		fmt.Fprintf(c.stdout, "Nothing to resume: the latest run (%d) destroyed run %d. Start a new one with \"flow run %s\".\n", latest.ID, latest.Destroys, displayPath(latest.Flow))
		return nil
	case path == "" && latest.Status == state.Succeeded && !f.selective():
		fmt.Fprintf(c.stdout, "Nothing to resume: the latest run (%d) succeeded. Start a new one with \"flow run %s\".\n", latest.ID, displayPath(latest.Flow))
		return nil
	case path == "":
		run, path = latest, latest.Flow
		if previous, base, err = engine.RunInputs(store, run); err != nil {
			return fail(ExitInvalid, err)
		}
	case latest != nil && latest.Status != state.Succeeded && !fresh:
		return failf(ExitInvalid, "the latest run (%d, %s) did not finish: it is %s; continue it with \"flow resume\" or start over with \"flow run --new\"",
			latest.ID, latest.Flow, effectiveStatus(latest))
	}
	if l == nil {
		if l, plan, err = c.loadSelected(path, f, base); err != nil {
			return err
		}
	}
	verb := "Resuming"
	if run == nil {
		// --target and --replace act on what the latest run of this flow left.
		verb = "Starting"
		if f.selective() && latest != nil && latest.Destroys == 0 && latest.Flow == absPath(path) {
			verb = fmt.Sprintf("From the checkpoints of run %d, starting", latest.ID)
			run, previous, err = engine.StartRun(store, l, latest)
		} else {
			run, previous, err = engine.StartRun(store, l, nil)
		}
	} else {
		var changed bool
		if changed, err = engine.ResumeRun(store, run, l); changed {
			fmt.Fprintf(c.stdout, "The flow changed since run %d started; instances whose inputs changed run again.\n", run.ID)
		}
	}
	if err != nil {
		return fail(ExitInvalid, err)
	}
	return c.runPlan(ctx, store, src, run, l, plan, previous, f, verb)
}

// loadSelected loads the flow at path and selects what --target and --replace name.
func (c *CLI) loadSelected(path string, f execFlags, base map[string]cty.Value) (*engine.Loaded, *engine.Plan, error) {
	l, err := c.load(path, f.varFlags, base, false)
	if err != nil {
		return nil, nil, err
	}
	plan, err := f.selectFrom(l.Plan)
	if err != nil {
		return nil, nil, fail(ExitInvalid, err)
	}
	return l, plan, nil
}

// session is what a run or a destroy holds while it executes: a context cancelled
// by the first SIGINT or SIGTERM, the state file, locked, its latest run, and the live
// endpoint that other terminals' status and logs ask.
type session struct {
	ctx    context.Context
	store  *state.Store
	src    *liveSource
	latest *state.Run
	// created is the run the state file was created with, when newRun gave one.
	created *state.Run
	close   func()
}

// openSession opens the state file for a run or a destroy. When the file does not
// exist yet and newRun is set, newRun (which loads the flow) gives the run to create
// the file with: one durable step fewer than creating it empty and then the run, and
// a flow that does not load leaves no state file behind.
func (c *CLI) openSession(newRun func() (*state.Run, error)) (*session, error) {
	// Signals are caught from the start: a Ctrl-C while the state opens or the flow
	// loads must end in exit code 130 and a resumable state, not the default death.
	ctx, stopSignals := c.interruptible()
	var opts state.Options
	if _, err := os.Stat(c.state()); newRun != nil && errors.Is(err, fs.ErrNotExist) {
		if opts.FirstRun, err = newRun(); err != nil {
			stopSignals()
			return nil, err
		}
	}
	store, err := state.Open(c.state(), opts)
	if err != nil {
		stopSignals()
		return nil, fail(ExitInvalid, err)
	}
	s := &session{ctx: ctx, store: store, src: &liveSource{}, close: func() { store.Close(); stopSignals() }}
	if stopLive, err := live.Serve(store.Path(), s.src); err != nil {
		c.logger(nil).Warn("flow status from another terminal will not work", "error", err)
	} else {
		s.close = func() { stopLive(); store.Close(); stopSignals() }
	}
	if opts.FirstRun != nil && opts.FirstRun.ID != 0 {
		s.created = opts.FirstRun
	}
	if s.latest, err = store.LatestRun(); err != nil {
		s.close()
		return nil, fail(ExitInvalid, err)
	}
	return s, nil
}

func absPath(p string) string {
	if abs, err := filepath.Abs(p); err == nil {
		return abs
	}
	return p
}

// runPlan executes plan (all of l's plan, or the part --target selected) with signal
// handling and the live status endpoint, then records and prints the outcome.
func (c *CLI) runPlan(ctx context.Context, store *state.Store, src *liveSource, run *state.Run, l *engine.Loaded, plan *engine.Plan, previous map[string]*state.Instance, f execFlags, verb string) error {
	live, err := f.live(c.stdout)
	if err != nil {
		return err
	}
	out, view := c.progressOut(live)
	// A run of the whole flow writes its final record with the last checkpoint (one
	// commit); a targeted one may end pending, which FinishRun decides afterwards.
	var finish func(*engine.Result) *state.Run
	whole := len(plan.Order) == len(l.Plan.Order)
	if whole {
		finish = func(res *engine.Result) *state.Run { return engine.RecordResult(run, res) }
	}
	runner := engine.NewRunner(plan, engine.Options{
		Parallelism: f.parallelism, FailFast: f.failFast, TransientRetry: f.transientBound(), RunID: run.ID, Store: store,
		Previous: previous, Replace: f.replace, Out: out, Logger: c.logger(plan.Scope.Redact), Live: live,
		Finish: finish,
	})
	fmt.Fprintf(c.stdout, "%s run %d of %s: %d task instances, parallelism %d\n", verb, run.ID, displayPath(run.Flow), len(plan.Order), f.parallelism)
	src.start(run, runner)
	began := time.Now()
	view.start(runner)
	res, runErr := runner.Run(ctx)
	view.close()
	if res == nil {
		return fail(ExitTaskFailed, runErr)
	}
	if !whole || runErr != nil { // a targeted run, or the last checkpoint (and the record with it) failed
		if err := engine.FinishRun(store, run, res, runErr, l.Plan); err != nil && runErr == nil {
			runErr = err
		}
	}
	c.summary(run, res, runner, time.Since(began), c.resumeHint(l, f.varFlags))
	return exitFor(res, runErr, "run failed")
}

// exitFor maps how an execution (a run or a destroy) ended to its exit error;
// failed is the message of a failure the summary already reported.
func exitFor(res *engine.Result, runErr error, failed string) error {
	switch {
	case runErr != nil:
		return fail(ExitTaskFailed, runErr)
	case res.Status == state.Interrupted:
		return reported(ExitInterrupted, errors.New("interrupted"))
	case res.Status != state.Succeeded:
		return reported(ExitTaskFailed, errors.New(failed))
	}
	return nil
}

// interruptible cancels the context on the first SIGINT or SIGTERM and exits at once
// on the second; every success was already committed, so nothing recorded is lost.
func (c *CLI) interruptible() (context.Context, func()) {
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		if _, ok := <-sigs; !ok {
			return
		}
		fmt.Fprintln(c.stderr, "\nInterrupting: stopping running tasks (press Ctrl-C again to exit at once; \"flow resume\" continues)")
		cancel()
		if _, ok := <-sigs; ok {
			fmt.Fprintln(c.stderr, "Exiting at once.")
			os.Exit(ExitInterrupted)
		}
	}()
	return ctx, func() { signal.Stop(sigs); close(sigs); cancel() }
}

func timeNow() *time.Time { t := time.Now().UTC(); return &t }

func displayPath(p string) string {
	if wd, err := os.Getwd(); err == nil {
		if rel, err := filepath.Rel(wd, p); err == nil && !filepath.IsAbs(rel) && len(rel) < len(p) && rel[0] != '.' {
			return rel
		}
	}
	return p
}
