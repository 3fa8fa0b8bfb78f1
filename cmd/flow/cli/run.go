package cli

import (
	"context"
	"errors"
	"fmt"
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
)

// execFlags are the flags of run and resume.
type execFlags struct {
	varFlags
	parallelism int
	failFast    bool
}

func (e *execFlags) add(cmd *cobra.Command) {
	e.varFlags.add(cmd)
	cmd.Flags().IntVar(&e.parallelism, "parallelism", 10, "how many task instances run at once")
	cmd.Flags().BoolVar(&e.failFast, "fail-fast", false, "start no new task after the first failure")
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
	if os.Getenv("GOGC") == "" && os.Getenv("GOMEMLIMIT") == "" {
		// A run is a batch process with a small live heap: trading some memory for less
		// garbage collection is measurable on runs of many tasks; the soft limit keeps
		// a run of tens of thousands of tasks from growing past it.
		debug.SetGCPercent(400)
		debug.SetMemoryLimit(192 << 20)
	}
	// Signals are caught from the start: a Ctrl-C while the state opens or the flow
	// loads must end in exit code 130 and a resumable state, not the default death.
	ctx, stopSignals := c.interruptible()
	defer stopSignals()
	store, err := state.Open(c.state(), state.Options{})
	if err != nil {
		return fail(ExitInvalid, err)
	}
	defer store.Close()
	src := &liveSource{}
	if stopLive, err := live.Serve(store.Path(), src); err != nil {
		c.logger(nil).Warn("flow status from another terminal will not work", "error", err)
	} else {
		defer stopLive()
	}
	latest, err := store.LatestRun()
	if err != nil {
		return fail(ExitInvalid, err)
	}
	var run *state.Run
	var previous map[string]*state.Instance
	var base map[string]cty.Value
	if path == "" {
		if latest == nil || latest.Status == state.Succeeded {
			return failf(ExitInvalid, "nothing to resume in %s: %s", store.Path(), describeLatest(latest))
		}
		run, path = latest, latest.Flow
		if previous, base, err = resumeInputs(store, run); err != nil {
			return fail(ExitInvalid, err)
		}
	} else if latest != nil && latest.Status != state.Succeeded && !fresh {
		return failf(ExitInvalid, "the latest run (%d, %s) did not finish: it is %s; continue it with \"flow resume\" or start over with \"flow run --new\"",
			latest.ID, latest.Flow, effectiveStatus(latest))
	}
	l, err := c.load(path, f.varFlags, base, false)
	if err != nil {
		return err
	}
	if run == nil {
		run, err = c.newRun(store, path, l)
	} else {
		err = c.reopenRun(store, run, l)
	}
	if err != nil {
		return fail(ExitInvalid, err)
	}
	return c.runPlan(ctx, store, src, run, l, previous, f)
}

func describeLatest(r *state.Run) string {
	if r == nil {
		return "there are no runs yet; start one with \"flow run PATH\""
	}
	return fmt.Sprintf("the latest run (%d) succeeded; start a new one with \"flow run %s\"", r.ID, r.Flow)
}

func resumeInputs(store *state.Store, run *state.Run) (map[string]*state.Instance, map[string]cty.Value, error) {
	recs, err := store.Instances(run.ID)
	if err != nil {
		return nil, nil, err
	}
	previous := make(map[string]*state.Instance, len(recs))
	for _, r := range recs {
		previous[r.Address] = r
	}
	base := map[string]cty.Value{}
	for name, sv := range run.Vars {
		v, err := sv.Decode()
		if err != nil {
			return nil, nil, fmt.Errorf("read recorded variable %q: %w", name, err)
		}
		base[name] = v
	}
	return previous, base, nil
}

func (c *CLI) newRun(store *state.Store, path string, l *loaded) (*state.Run, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	run := &state.Run{Flow: abs, FlowHash: l.flow.Hash, Status: state.Running,
		StartedAt: time.Now().UTC(), PID: os.Getpid()}
	if err := recordVars(run, l); err != nil {
		return nil, err
	}
	if err := store.CreateRun(run); err != nil {
		return nil, err
	}
	return run, nil
}

func (c *CLI) reopenRun(store *state.Store, run *state.Run, l *loaded) error {
	if run.FlowHash != l.flow.Hash {
		fmt.Fprintf(c.stdout, "The flow changed since run %d started; instances whose inputs changed run again.\n", run.ID)
	}
	run.FlowHash, run.Status, run.PID, run.FinishedAt, run.Error = l.flow.Hash, state.Running, os.Getpid(), nil, ""
	run.Resumes++
	if err := recordVars(run, l); err != nil {
		return err
	}
	return store.PutRun(run)
}

// recordVars stores every variable value except sensitive ones, which are only named.
func recordVars(run *state.Run, l *loaded) error {
	run.Vars, run.Sensitive = map[string]state.Value{}, nil
	for name, v := range l.vars {
		if l.flow.Variables[name].Sensitive {
			run.Sensitive = append(run.Sensitive, name)
			continue
		}
		sv, err := state.EncodeValue(v)
		if err != nil {
			return fmt.Errorf("record variable %q: %w", name, err)
		}
		run.Vars[name] = sv
	}
	return nil
}

// runPlan executes with signal handling and the live status endpoint, then records
// and prints the outcome.
func (c *CLI) runPlan(ctx context.Context, store *state.Store, src *liveSource, run *state.Run, l *loaded, previous map[string]*state.Instance, f execFlags) error {
	finished := func(res *engine.Result) *state.Run {
		run.Status, run.FinishedAt = res.Status, timeNow()
		run.Outputs = storedOutputs(res.Outputs)
		return run
	}
	runner := engine.NewRunner(l.plan, engine.Options{
		Parallelism: f.parallelism, FailFast: f.failFast, RunID: run.ID, Store: store,
		Previous: previous, Out: c.stdout, Logger: c.logger(l.plan.Scope.Redact),
		Finish: finished, // the run record rides with the last checkpoint
	})
	verb := "Starting"
	if previous != nil {
		verb = "Resuming"
	}
	fmt.Fprintf(c.stdout, "%s run %d of %s: %d task instances, parallelism %d\n", verb, run.ID, displayPath(run.Flow), len(l.plan.Order), f.parallelism)
	src.start(run, runner)
	began := time.Now()
	res, runErr := runner.Run(ctx)
	if res == nil {
		return fail(ExitTaskFailed, runErr)
	}
	if runErr != nil { // the last checkpoint, and the run record with it, failed or never came
		finished(res)
		run.Status, run.Error = state.Failed, runErr.Error()
		_ = store.PutRun(run) // best effort: the error that matters is runErr
	}
	c.summary(run, res, runner, time.Since(began))
	switch {
	case runErr != nil:
		return fail(ExitTaskFailed, runErr)
	case res.Status == state.Interrupted:
		return reported(ExitInterrupted, errors.New("interrupted"))
	case res.Status != state.Succeeded:
		return reported(ExitTaskFailed, errors.New("run failed"))
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

func storedOutputs(outs map[string]cty.Value) map[string]state.Value {
	stored := map[string]state.Value{}
	for name, v := range outs {
		if v.ContainsMarked() {
			continue // sensitive outputs are shown as (sensitive) and never stored
		}
		if sv, err := state.EncodeValue(v); err == nil {
			stored[name] = sv
		}
	}
	return stored
}

func displayPath(p string) string {
	if wd, err := os.Getwd(); err == nil {
		if rel, err := filepath.Rel(wd, p); err == nil && !filepath.IsAbs(rel) && len(rel) < len(p) && rel[0] != '.' {
			return rel
		}
	}
	return p
}
