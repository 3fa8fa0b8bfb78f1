package cli

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/flowdev/flow/engine"
)

func (c *CLI) destroyCmd() *cobra.Command {
	var v varFlags
	var progress progressFlag
	var parallelism int
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

How a task type is undone is shown by "flow tasks TYPE" (Undo); a type that cannot be
undone (exec) is left as it is and said so. When an instance cannot be destroyed, what
it depends on is kept. Each undone instance is checkpointed under a destroy run, so an
interrupted or failed destroy continues with "flow destroy" again; a destroy that
succeeded says so and exits 0.

Exit codes: 0 success, 1 an instance could not be destroyed, 2 invalid flow, usage or
state, 130 interrupted.`,
		Example: `  flow destroy
  flow destroy --state .flow/lab.db
  flow destroy --var token=$TOKEN    # sensitive variables are not stored
  flow destroy --flow new/place/main.hcl    # the flow file moved`,
		Args: exactArgs(0, ""),
		RunE: func(cmd *cobra.Command, args []string) error { return c.destroy(v, progress, parallelism) },
	}
	v.add(cmd)
	progress.add(cmd)
	cmd.Flags().IntVar(&parallelism, "parallelism", 10, "how many task instances are undone at once")
	c.addMovedFlow(cmd)
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
	ctx, stopSignals := c.interruptible()
	defer stopSignals()
	out, view := c.progressOut(showLive)
	obs := &observer{cli: c, view: view, parallelism: parallelism}
	req := c.request(v, out, showLive)
	req.Observer = obs
	req.Parallelism, req.Flow = parallelism, c.movedFlow
	o, err := engine.NewSession(c.state(), c.reg).Destroy(ctx, req)
	view.close()
	if err != nil {
		return c.refused(err)
	}
	c.destroySummary(o.Run, o.Result, time.Since(obs.began), c.resumeHint(o.Loaded, v))
	return exitFor(o.Result, o.Err, "destroy failed")
}

func (c *CLI) destroySummary(run *engine.RunRecord, res *engine.Result, took time.Duration, hint string) {
	counts := map[engine.Status]int{}
	for _, r := range res.Records {
		counts[r.Status]++
	}
	parts := []string{fmt.Sprintf("%d destroyed", counts[engine.Succeeded])}
	for _, p := range []struct {
		s    engine.Status
		name string
	}{{engine.Skipped, "left as they are"}, {engine.Failed, "failed"}, {engine.Interrupted, "interrupted"}} {
		if counts[p.s] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[p.s], p.name))
		}
	}
	fmt.Fprintf(c.stdout, "\nDestroy run %d %s in %s: %s.\n", run.ID, res.Status, roundDuration(took), strings.Join(parts, ", "))
	if res.Status != engine.Succeeded {
		fmt.Fprintf(c.stdout, "Continue with %q; see \"flow status\".\n", strings.Replace(hint, "flow resume", "flow destroy", 1))
	}
}
