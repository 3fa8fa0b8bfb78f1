package cli

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/flowdev/flow/engine"
)

// destroyFlags are the flags of destroy.
type destroyFlags struct {
	varFlags
	progressFlag
	parallelism int
	autoApprove bool
}

func (c *CLI) destroyCmd() *cobra.Command {
	var f destroyFlags
	cmd := &cobra.Command{
		Use:   "destroy",
		Short: "Undo what the latest run created, in reverse dependency order",
		Long: `Undo what the latest run of the state file created, in the directory that run was
started in (wherever destroy is called from): every task instance it started is
destroyed in reverse dependency order (what depends on an instance goes before it;
independent ones at once, up to --parallelism), each
decoded from the inputs that run evaluated: the flow is read again from the recorded
path with the variables the run recorded, so nothing has to be given again except
sensitive variables, which are never stored.

Destroy first shows what it will undo ("flow plan --destroy" shows the same) and asks;
only "yes" goes on. Without a terminal to ask on it refuses, unless --auto-approve
(what scripts and CI pass) says not to ask.

How a task type is undone is shown by "flow tasks TYPE" (Undo); a type that cannot be
undone (exec) is left as it is and said so. When an instance cannot be destroyed, what
it depends on is kept. Each undone instance is checkpointed under a destroy run, so an
interrupted or failed destroy continues with "flow destroy" again; a destroy that
succeeded says so and exits 0.

Exit codes: 0 success, 1 an instance could not be destroyed or the question was not
answered "yes", 2 invalid flow, usage or state, or no terminal and no --auto-approve,
130 interrupted.`,
		Example: `  flow destroy
  flow destroy --state .flow/lab.db --auto-approve
  flow destroy --var token=$TOKEN    # sensitive variables are not stored
  flow destroy --flow new/place/main.hcl    # the flow file moved`,
		Args: exactArgs(0, ""),
		RunE: func(cmd *cobra.Command, args []string) error { return c.destroy(f) },
	}
	f.varFlags.add(cmd)
	f.progressFlag.add(cmd)
	addParallelism(cmd, &f.parallelism, "how many task instances are undone at once (at least 1)")
	cmd.Flags().BoolVar(&f.autoApprove, "auto-approve", false, "destroy without showing what and asking first")
	c.addMovedFlow(cmd)
	return cmd
}

func (c *CLI) destroy(f destroyFlags) error {
	if !f.autoApprove && !c.stdinTerminal {
		if done, err := c.nothingToDestroy(f); done {
			return err
		}
		return failf(ExitInvalid, "flow destroy asks before it destroys, and there is no terminal to ask on: "+
			"nothing was destroyed; see what it would do with %q, and pass --auto-approve to destroy without asking",
			c.commandHint("flow plan --destroy"))
	}
	return c.walk(walkCall{vars: f.varFlags, progress: f.progressFlag, parallelism: f.parallelism,
		continueWith: "flow destroy", failed: "destroy failed",
		set: func(req *engine.Request) {
			req.Flow = c.movedFlow
			if !f.autoApprove {
				req.Confirm = c.confirmDestroy
			}
		},
		do: (*engine.Session).Destroy,
		refused: func(err error) error {
			if errors.As(err, new(*engine.DeclinedError)) {
				return failf(ExitTaskFailed, "%v", err)
			}
			if said, _ := c.sayNothingToDestroy(err); said {
				return nil
			}
			return c.refused(err)
		},
		summary: func(o *engine.Outcome, took time.Duration) {
			c.destroySummary(o.Run, o.Result, took, c.resumeHint(o.Loaded, f.varFlags))
		},
	})
}

// confirmDestroy shows what the destroy will do and reads the answer: only "yes" goes on.
func (c *CLI) confirmDestroy(pv *engine.DestroyPreview) bool {
	c.printDestroyPreview(pv)
	fmt.Fprintf(c.stdout, "\nDo you want to destroy %s? Only \"yes\" goes on.\n  Enter a value: ", count(pv.Destroys(), "instance"))
	line, _ := bufio.NewReader(c.stdin).ReadString('\n')
	fmt.Fprintln(c.stdout)
	return strings.TrimSpace(line) == "yes"
}

func (c *CLI) destroySummary(run *engine.RunRecord, res *engine.Result, took time.Duration, hint string) {
	counts := map[engine.Status]int{}
	for _, r := range res.Records {
		if r.Removed && r.Status == engine.Succeeded {
			continue // counted in res.Removed
		}
		counts[r.Status]++
	}
	parts := []string{fmt.Sprintf("%d destroyed", counts[engine.Succeeded]+res.Removed)}
	for _, p := range []struct {
		s    engine.Status
		name string
	}{{engine.Skipped, "left as it is"}, {engine.Failed, "failed"}, {engine.Interrupted, "interrupted"}} {
		if n := counts[p.s]; n > 0 {
			name := p.name
			if p.s == engine.Skipped {
				name = plural(n, name)
			}
			parts = append(parts, fmt.Sprintf("%d %s", n, name))
		}
	}
	fmt.Fprintf(c.stdout, "\nDestroy run %d %s in %s: %s.\n", run.ID, res.Status, roundDuration(took), strings.Join(parts, ", "))
	if res.Status != engine.Succeeded {
		fmt.Fprintf(c.stdout, "Continue with %q; see %q.\n", strings.Replace(hint, "flow resume", "flow destroy", 1), c.commandHint("flow status"))
	}
}

// nothingToDestroy reports whether a destroy would undo nothing, saying so: then it
// needs no answer, and a caller without a terminal is not refused.
func (c *CLI) nothingToDestroy(f destroyFlags) (bool, error) {
	req := c.request(f.varFlags, io.Discard, false)
	req.Flow = c.movedFlow
	pv, err := engine.NewSession(c.state(), c.reg).PreviewDestroy(req)
	if err != nil {
		return c.sayNothingToDestroy(err)
	}
	if pv.Destroys() > 0 {
		return false, nil
	}
	fmt.Fprintf(c.stdout, "Nothing to destroy: flow destroy would leave every instance run %d made as it is (see %q).\n",
		pv.Target.ID, c.commandHint("flow plan --destroy"))
	return true, nil
}

// sayNothingToDestroy says, for a refusal that means there is nothing to destroy (no
// state file, no run, the latest run destroyed), why, and reports true: that is no failure.
func (c *CLI) sayNothingToDestroy(err error) (bool, error) {
	var (
		none    *engine.NoStateError
		noRuns  *engine.NoRunsError
		nothing *engine.NothingToDoError
	)
	switch {
	case errors.As(err, &none):
		fmt.Fprintf(c.stdout, "Nothing to destroy: there is no state file %s.\n", c.whereNoState(none.Path))
	case errors.As(err, &noRuns):
		fmt.Fprintf(c.stdout, "Nothing to destroy: %s holds no runs.\n", noRuns.Path)
	case errors.As(err, &nothing):
		c.printNothing(nothing)
	default:
		return false, nil
	}
	return true, nil
}
