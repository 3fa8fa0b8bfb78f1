package cli

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/flowdev/flow/engine"
	"github.com/flowdev/flow/engine/state"
)

func (c *CLI) destroyCmd() *cobra.Command {
	var v varFlags
	var progress progressFlag
	var parallelism int
	cmd := &cobra.Command{
		Use:   "destroy",
		Short: "Undo what the latest run created, in reverse dependency order",
		Long: `Undo what the latest run of the state file created: every task instance it started is
destroyed in reverse dependency order (what depends on an instance goes before it;
independent ones at once, up to --parallelism), each
decoded from the inputs that run evaluated: the flow is read again from the recorded
path with the variables the run recorded, so nothing has to be given again except
sensitive variables, which are never stored.

How a task type is undone is shown by "flow tasks TYPE" (Undo); a type that cannot be
undone (exec) is left as it is and said so. When an instance cannot be destroyed, what
it depends on is kept. Each undone instance is checkpointed under a destroy run, so an
interrupted or failed destroy continues with "flow destroy" again; a destroy that
succeeded says so and exits 0.

Exit codes: 0 success, 1 an instance could not be destroyed, 2 invalid flow, usage or
state, 130 interrupted.`,
		Example: `  flow destroy
  flow destroy --state .flow/lab.db
  flow destroy --var token=$TOKEN    # sensitive variables are not stored`,
		Args: exactArgs(0, ""),
		RunE: func(cmd *cobra.Command, args []string) error { return c.destroy(v, progress, parallelism) },
	}
	v.add(cmd)
	progress.add(cmd)
	cmd.Flags().IntVar(&parallelism, "parallelism", 10, "how many task instances are undone at once")
	return cmd
}

func (c *CLI) destroy(v varFlags, progress progressFlag, parallelism int) error {
	if parallelism < 1 {
		return failf(ExitInvalid, "--parallelism must be at least 1, got %d", parallelism)
	}
	showLive, err := progress.live(c.stdout)
	if err != nil {
		return err
	}
	sess, err := c.openSession(nil)
	if err != nil {
		return err
	}
	defer sess.close()
	ctx, store, src, latest := sess.ctx, sess.store, sess.src, sess.latest
	if latest == nil {
		return failf(ExitInvalid, "nothing to destroy in %s: there are no runs", store.Path())
	}
	target, run := latest, (*state.Run)(nil)
	if latest.Destroys != 0 {
		if latest.Status == state.Succeeded {
			fmt.Fprintf(c.stdout, "Nothing to destroy: run %d was destroyed by run %d.\n", latest.Destroys, latest.ID)
			return nil
		}
		if target, err = store.GetRun(latest.Destroys); err != nil {
			return fail(ExitInvalid, err)
		}
		run = latest
	}
	created, base, err := engine.RunInputs(store, target)
	if err != nil {
		return fail(ExitInvalid, err)
	}
	l, err := c.load(target.Flow, v, base, false)
	if err != nil {
		return err
	}
	var done map[string]*state.Instance
	verb := "Destroying"
	if run == nil {
		run, err = engine.StartDestroy(store, target, l)
	} else {
		verb = "Continuing to destroy"
		if done, _, err = engine.RunInputs(store, run); err == nil {
			_, err = engine.ResumeRun(store, run, l)
		}
	}
	if err != nil {
		return fail(ExitInvalid, err)
	}
	if l.Flow.Hash != target.FlowHash {
		fmt.Fprintf(c.stdout, "The flow changed since run %d; each instance is destroyed as the files say now.\n", target.ID)
	}
	fmt.Fprintf(c.stdout, "%s what run %d of %s created (destroy run %d)\n", verb, target.ID, displayPath(target.Flow), run.ID)
	out, view := c.progressOut(showLive)
	d := engine.NewDestruction(l.Plan, created, engine.DestroyOptions{RunID: run.ID, Store: store, Done: done,
		Out: out, Logger: c.logger(l.Plan.Scope.Redact), Live: showLive, Parallelism: parallelism})
	src.start(run, d)
	began := time.Now()
	view.start(d)
	res, runErr := d.Run(ctx)
	view.close()
	if err := engine.FinishDestroy(store, run, res, runErr); err != nil && runErr == nil {
		runErr = err
	}
	c.destroySummary(run, res, time.Since(began), c.resumeHint(l, v))
	return exitFor(res, runErr, "destroy failed")
}

func (c *CLI) destroySummary(run *state.Run, res *engine.Result, took time.Duration, hint string) {
	counts := map[state.Status]int{}
	for _, r := range res.Records {
		counts[r.Status]++
	}
	parts := []string{fmt.Sprintf("%d destroyed", counts[state.Succeeded])}
	for _, p := range []struct {
		s    state.Status
		name string
	}{{state.Skipped, "left as they are"}, {state.Failed, "failed"}, {state.Interrupted, "interrupted"}} {
		if counts[p.s] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[p.s], p.name))
		}
	}
	fmt.Fprintf(c.stdout, "\nDestroy run %d %s in %s: %s.\n", run.ID, res.Status, roundDuration(took), strings.Join(parts, ", "))
	if res.Status != state.Succeeded {
		fmt.Fprintf(c.stdout, "Continue with %q; see \"flow status\".\n", strings.Replace(hint, "flow resume", "flow destroy", 1))
	}
}
