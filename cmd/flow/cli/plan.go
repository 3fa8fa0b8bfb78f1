package cli

import (
	"errors"
	"fmt"
	"path/filepath"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/zclconf/go-cty/cty"

	"github.com/flowdev/flow/engine/state"
)

func (c *CLI) planCmd() *cobra.Command {
	var v varFlags
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
			return c.plan(args[0], v)
		},
	}
	v.add(cmd)
	return cmd
}

func (c *CLI) plan(path string, v varFlags) error {
	previous, base, runID, err := c.previousFor(path)
	if err != nil {
		return err
	}
	l, err := c.load(path, v, base, false)
	if err != nil {
		return err
	}
	if runID != 0 {
		fmt.Fprintf(c.stdout, "Resuming run %d would:\n", runID)
	} else {
		fmt.Fprintln(c.stdout, "A new run would:")
	}
	counts := map[string]int{}
	tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
	for _, d := range l.plan.Preview(previous) {
		counts[string(d.Action)]++
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", d.Action, d.Addr, d.Reason)
	}
	tw.Flush()
	fmt.Fprintf(c.stdout, "%d instances: %d to run, %d to skip, %d decided at run time.\n",
		len(l.plan.Order), counts["run"], counts["skip"], counts["run?"])
	return nil
}

// previousFor returns the records of the latest unfinished run of path, if any. A
// missing state file means nothing ran yet; plan never creates one.
func (c *CLI) previousFor(path string) (map[string]*state.Instance, map[string]cty.Value, uint64, error) {
	store, busy, err := c.openRead()
	if err != nil {
		if errors.As(err, new(noStateError)) {
			return nil, nil, 0, nil
		}
		return nil, nil, 0, err
	}
	if busy {
		return nil, nil, 0, failf(ExitInvalid, "%s is in use by a running flow; plan again when it ends", c.state())
	}
	defer store.Close()
	run, err := store.LatestRun()
	if err != nil || run == nil || run.Status == state.Succeeded {
		return nil, nil, 0, err
	}
	abs, _ := filepath.Abs(path)
	if run.Flow != abs {
		return nil, nil, 0, nil
	}
	previous, base, err := resumeInputs(store, run)
	if err != nil {
		return nil, nil, 0, fail(ExitInvalid, err)
	}
	return previous, base, run.ID, nil
}

func (c *CLI) validateCmd() *cobra.Command {
	var v varFlags
	cmd := &cobra.Command{
		Use:   "validate PATH",
		Short: "Check a flow without running anything",
		Long: `Check the flow at PATH: syntax, task types, attributes and their types, references,
for_each keys, and dependency cycles. Every error is reported with its file, line and
column. Variables without a value are treated as unknown, so a flow can be checked
before its secrets are at hand.`,
		Example: `  flow validate flows/demo.hcl
  flow validate flows/ --var members='["a"]'`,
		Args: exactArgs(1, "PATH"),
		RunE: func(cmd *cobra.Command, args []string) error {
			l, err := c.load(args[0], v, nil, true)
			if err != nil {
				return err
			}
			fmt.Fprintf(c.stdout, "%s is valid: %d tasks, %d instances.\n", args[0], len(l.flow.Tasks), len(l.plan.Order))
			return nil
		},
	}
	v.add(cmd)
	return cmd
}
