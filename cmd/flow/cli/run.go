package cli

import (
	"context"
	"os"
	"runtime/debug"
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

// execute runs a flow: a new run of path, or, with path "", a resume of the latest run.
func (c *CLI) execute(path string, f execFlags, fresh bool) error {
	if os.Getenv("GOGC") == "" && os.Getenv("GOMEMLIMIT") == "" {
		// A run is a batch process with a small live heap: trading some memory for less
		// garbage collection is measurable on runs of many tasks; the soft limit keeps
		// a run of tens of thousands of tasks from growing past it.
		debug.SetGCPercent(400)
		debug.SetMemoryLimit(192 << 20)
	}
	return c.walk(walkCall{vars: f.varFlags, progress: f.progressFlag, parallelism: f.parallelism,
		continueWith: "flow resume", failed: "run failed",
		set: func(req *engine.Request) {
			req.Flow, req.New, req.Targets, req.Replace = path, fresh, f.targetAddrs(), f.replaceAddrs()
			req.NoRefresh, req.KeepRemoved, req.Move = !f.refresh, f.keepRemoved, f.move
			req.FailFast, req.TransientRetry = f.failFast, f.transientBound()
			if path == "" {
				req.Flow = c.movedFlow
			}
		},
		do: func(s *engine.Session, ctx context.Context, req engine.Request) (*engine.Outcome, error) {
			if path == "" {
				return s.Resume(ctx, req)
			}
			return s.Run(ctx, req)
		},
		refused: c.refused,
		summary: func(o *engine.Outcome, took time.Duration) {
			c.summary(o.Run, o.Result, o.Walker, took, c.resumeHint(o.Loaded, f.varFlags))
		},
	})
}
