package cli

import (
	"errors"
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/flowdev/flow/engine"
)

func (c *CLI) planCmd() *cobra.Command {
	var v varFlags
	var sel selectFlags
	cmd := &cobra.Command{
		Use:   "plan PATH",
		Short: "List the task instances in order and whether a resume would run or skip each",
		Long: `List every task instance of the flow in dependency order (a run starts ready instances
in this order; with free slots it does not wait for one), each with what
"flow resume" would do with it and why: run (not run before, failed, inputs changed),
skip (succeeded with the same inputs), or run? (it waits for something that runs, and is
skipped at run time only if its inputs come out unchanged). Without an unfinished run of
this flow in the state file, everything runs.`,
		Example: `  flow plan flows/demo.hcl
  flow plan flows/lab.hcl --var-file lab.vars.hcl`,
		Args: exactArgs(1, "PATH"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return c.plan(args[0], v, sel)
		},
	}
	v.add(cmd)
	sel.add(cmd)
	return cmd
}

func (c *CLI) plan(path string, v varFlags, sel selectFlags) error {
	req := c.request(v, nil, false)
	req.Flow, req.Targets, req.Replace = path, sel.targetAddrs(), sel.replaceAddrs()
	pv, err := engine.NewSession(c.state(), c.reg).Preview(req)
	if errors.As(err, new(*engine.BusyError)) {
		return failf(ExitInvalid, "%s is in use by a running flow; plan again when it ends", c.state())
	}
	if err != nil {
		return c.refused(err)
	}
	switch {
	case pv.From == nil:
		fmt.Fprintln(c.stdout, "A new run would:")
	case pv.From.Status != engine.Succeeded:
		fmt.Fprintf(c.stdout, "Resuming run %d would:\n", pv.From.ID)
	default:
		fmt.Fprintf(c.stdout, "A new run from the checkpoints of run %d would:\n", pv.From.ID)
	}
	counts := map[string]int{}
	tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
	for _, d := range pv.Decisions {
		counts[string(d.Action)]++
		reason := d.Reason
		if desc := pv.Plan.Instances[d.Addr].Task.Description; desc != "" {
			reason += "  # " + firstLine(desc)
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", d.Action, d.Addr, reason)
	}
	tw.Flush()
	fmt.Fprintf(c.stdout, "%d instances: %d to run, %d to skip, %d decided at run time.\n",
		len(pv.Plan.Order), counts["run"], counts["skip"], counts["run?"])
	return nil
}
