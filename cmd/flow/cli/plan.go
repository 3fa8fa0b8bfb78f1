package cli

import (
	"errors"
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/zclconf/go-cty/cty"

	"github.com/flowdev/flow/engine"
	"github.com/flowdev/flow/engine/state"
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
	previous, base, run, err := c.previousFor(path, sel.selective())
	if err != nil {
		return err
	}
	l, err := c.load(path, v, base, false)
	if err != nil {
		return err
	}
	plan, err := sel.selectFrom(l.Plan)
	if err != nil {
		return fail(ExitInvalid, err)
	}
	switch {
	case run == nil:
		fmt.Fprintln(c.stdout, "A new run would:")
	case run.Status != state.Succeeded:
		fmt.Fprintf(c.stdout, "Resuming run %d would:\n", run.ID)
	default:
		fmt.Fprintf(c.stdout, "A new run from the checkpoints of run %d would:\n", run.ID)
	}
	counts := map[string]int{}
	tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
	for _, d := range plan.Preview(previous, sel.replace) {
		counts[string(d.Action)]++
		reason := d.Reason
		if desc := plan.Instances[d.Addr].Task.Description; desc != "" {
			reason += "  # " + firstLine(desc)
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", d.Action, d.Addr, reason)
	}
	tw.Flush()
	fmt.Fprintf(c.stdout, "%d instances: %d to run, %d to skip, %d decided at run time.\n",
		len(plan.Order), counts["run"], counts["skip"], counts["run?"])
	return nil
}

// previousFor returns the records of the latest run of path if it is unfinished or,
// with selective set (--target, --replace), whatever its status. A missing state file
// means nothing ran yet; plan never creates one.
func (c *CLI) previousFor(path string, selective bool) (map[string]*state.Instance, map[string]cty.Value, *state.Run, error) {
	store, busy, err := c.openRead()
	if err != nil {
		if errors.As(err, new(noStateError)) {
			return nil, nil, nil, nil
		}
		return nil, nil, nil, err
	}
	if busy {
		return nil, nil, nil, failf(ExitInvalid, "%s is in use by a running flow; plan again when it ends", c.state())
	}
	defer store.Close()
	run, err := store.LatestRun()
	if err != nil || run == nil || run.Destroys != 0 || (run.Status == state.Succeeded && !selective) || run.Flow != absPath(path) {
		return nil, nil, nil, err
	}
	previous, base, err := engine.RunInputs(store, run)
	if err != nil {
		return nil, nil, nil, fail(ExitInvalid, err)
	}
	return previous, base, run, nil
}

func (c *CLI) validateCmd() *cobra.Command {
	var v varFlags
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "validate PATH",
		Short: "Check a flow without running anything",
		Long: `Check the flow at PATH: syntax, task types, attributes and their types, references,
for_each keys, and dependency cycles. Every error is reported with its file, line and
column. Variables without a value are treated as unknown, so a flow can be checked
before its secrets are at hand.`,
		Example: `  flow validate flows/demo.hcl
  flow validate flows/ --var members='["a"]'
  flow validate --json flows/demo.hcl | jq '.diagnostics[]'`,
		Args: exactArgs(1, "PATH"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if asJSON {
				return c.validateJSON(args[0], v)
			}
			l, err := c.load(args[0], v, nil, true)
			if err != nil {
				return err
			}
			fmt.Fprintf(c.stdout, "%s is valid: %d tasks, %d instances.\n", args[0], len(l.Flow.Tasks), len(l.Plan.Order))
			return nil
		},
	}
	v.add(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result and every diagnostic as one JSON object")
	return cmd
}
