package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/flowdev/flow/engine"
)

func (c *CLI) planCmd() *cobra.Command {
	var v varFlags
	var sel selectFlags
	var destroy, keepRemoved, move bool
	cmd := &cobra.Command{
		Use:   "plan PATH",
		Short: "Show what the next run would do with each task instance, and why",
		Long: `List every task instance of the flow in dependency order (a run starts ready instances
in this order; with free slots it does not wait for one), each with what the next
command would do with it and why. With an unfinished run of this flow in the state
file, that is "flow resume"; with --target or --replace, a run from the latest run's
checkpoints: run (not run before, failed, inputs changed, drifted, replaced), skip (up
to date: succeeded in that run with the same inputs, and its object is still there),
or run? (it waits for something that runs, and is skipped at run time only if its
inputs come out unchanged). Otherwise it is a new run, which runs every instance; each
line then says what the latest run did with it. Instances the state holds and the flow
no longer has are listed first: destroy (the run undoes them before anything else) or
keep (and why).

Refresh: before a success counts as up to date, its type looks at its object when it
can (an LXD instance runs, a proxy device is there and its port answers, a file has
its content, Kubernetes objects exist, a process runs); what drifted runs again.
--refresh=false trusts the records.

With --destroy, show what "flow destroy" would do instead: each instance the latest run
started, in the order a destroy undoes them, with how it is undone or why it is kept.
PATH may then be left out: the flow is the one the run recorded (--flow PATH: where it
is now, if it moved, as for flow destroy).`,
		Example: `  flow plan flows/demo.hcl
  flow plan flows/lab.hcl --replace 'lxd_launch.member["member2"]'
  flow plan flows/lab.hcl --refresh=false
  flow plan flows/lab.hcl --move       # the project moved here: what the run takes over
  flow plan flows/lab.hcl --var-file lab.vars.hcl
  flow plan --destroy --state .flow/lab.db`,
		Args: func(cmd *cobra.Command, args []string) error {
			if destroy && len(args) == 0 {
				return nil
			}
			return exactArgs(1, "PATH")(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if c.movedFlow != "" && !destroy {
				return failf(ExitInvalid, "--flow is for plan --destroy: where the run's flow is now; a plan of a flow names it as PATH")
			}
			if destroy {
				path := ""
				if len(args) == 1 {
					path = args[0]
				}
				return c.planDestroy(path, v)
			}
			return c.plan(args[0], v, sel, keepRemoved, move)
		},
	}
	v.add(cmd)
	sel.add(cmd)
	cmd.Flags().BoolVar(&destroy, "destroy", false, `show what "flow destroy" would do`)
	cmd.Flags().BoolVar(&keepRemoved, "keep-removed", false, `show what "flow run --keep-removed" would do`)
	cmd.Flags().BoolVar(&move, "move", false, `show what "flow run --move" would do: take over what the state holds made in another directory`)
	c.addMovedFlow(cmd)
	return cmd
}

func (c *CLI) plan(path string, v varFlags, sel selectFlags, keepRemoved, move bool) error {
	req := c.request(v, nil, false)
	req.Flow, req.Targets, req.Replace = path, sel.targetAddrs(), sel.replaceAddrs()
	req.NoRefresh, req.KeepRemoved, req.Move = !sel.refresh, keepRemoved, move
	// Ctrl-C stops the refresh probes; nothing is written, so nothing is lost.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	pv, err := engine.NewSession(c.state(), c.reg).Preview(ctx, req)
	if errors.Is(err, context.Canceled) {
		return reported(ExitInterrupted, errors.New("interrupted"))
	}
	if err != nil {
		return c.planRefused(err)
	}
	if away := pv.Elsewhere; away != nil && move {
		fmt.Fprintf(c.stdout, "The run takes over %s made in %s (--move: the project and its files moved here): every undo of what they made acts here, in %s.\n",
			count(away.Count, "instance"), strings.Join(away.Dirs, ", "), away.Here)
	} else if away != nil {
		fmt.Fprintf(c.stdout, "A run here is refused: %v. Run it from there, give this directory a state of its own (--state), or, if the project and its files moved here, take them over with %q. With --move, a run would:\n",
			away, c.commandHint("flow run --move", path))
	}
	switch {
	case pv.Refused && pv.Last != nil:
		fmt.Fprintf(c.stdout, "Run %d destroys run %d and did not finish: %q finishes it, and a run refuses until then. With --new, a run would:\n",
			pv.Last.ID, pv.Last.Destroys, c.commandHint("flow destroy"))
	case pv.From == nil && pv.Last != nil && pv.Last.Destroys == 0 && pv.Last.Status != engine.Succeeded:
		fmt.Fprintf(c.stdout, "Run %d ran only its --target instances (%q continues it). A new run would run every instance again (each task finds what it already made and leaves it):\n",
			pv.Last.ID, c.commandHint("flow resume"))
	case pv.From == nil && pv.Last != nil && pv.Last.Destroys == 0:
		fmt.Fprintf(c.stdout, "Run %d succeeded. A new run would run every instance again (each task finds what it already made and leaves it):\n", pv.Last.ID)
	case pv.From == nil:
		fmt.Fprintln(c.stdout, "A new run would:")
	case pv.Resumes:
		fmt.Fprintf(c.stdout, "Resuming run %d would:\n", pv.From.ID)
	default:
		fmt.Fprintf(c.stdout, "A new run from the checkpoints of run %d would:\n", pv.From.ID)
	}
	removed, counts := map[engine.Action]int{}, map[string]int{}
	tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
	for _, d := range pv.Removed {
		removed[d.Action]++
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", d.Action, d.Addr, d.Reason)
	}
	for _, d := range pv.Decisions {
		counts[string(d.Action)]++
		reason := d.Reason
		if desc := pv.Plan.Instances[d.Addr].Task.Description; desc != "" {
			reason += "  # " + firstLine(desc)
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", d.Action, d.Addr, reason)
	}
	tw.Flush()
	fmt.Fprintf(c.stdout, "%s: %d to run, %d to skip, %d decided at run time.\n",
		count(len(pv.Plan.Order), "instance"), counts["run"], counts["skip"], counts["run?"])
	if len(pv.Removed) > 0 {
		fmt.Fprintf(c.stdout, "%s no longer in the flow: %d to destroy first, %d to keep.\n",
			count(len(pv.Removed), "instance"), removed[engine.ActionDestroy], removed[engine.ActionKeep])
	}
	return nil
}

// planDestroy prints what flow destroy would do; path, when given, must be the flow
// the state holds.
func (c *CLI) planDestroy(path string, v varFlags) error {
	req := c.request(v, nil, false)
	req.Flow = c.movedFlow
	pv, err := engine.NewSession(c.state(), c.reg).PreviewDestroy(req)
	if err != nil {
		return c.planRefused(err)
	}
	if path != "" && absPath(path) != pv.Flow {
		return failf(ExitInvalid, "the state file %s holds run %d of %s, not %s", engine.ShowState(c.state()), pv.Target.ID, displayPath(pv.Flow), path)
	}
	c.printDestroyPreview(pv)
	return nil
}

func (c *CLI) planRefused(err error) error {
	if errors.As(err, new(*engine.BusyError)) {
		return failf(ExitInvalid, "%s is in use by a running flow; plan again when it ends", engine.ShowState(c.state()))
	}
	return c.refused(err)
}

// printDestroyPreview lists what a destroy would do, as plan --destroy and destroy show it.
func (c *CLI) printDestroyPreview(pv *engine.DestroyPreview) {
	w := c.stdout
	if pv.Continues != nil {
		fmt.Fprintf(w, "Continuing destroy run %d of what run %d of %s created", pv.Continues.ID, pv.Target.ID, displayPath(pv.Flow))
	} else {
		fmt.Fprintf(w, "Destroying what run %d of %s created", pv.Target.ID, displayPath(pv.Flow))
	}
	if pv.Dir != "" {
		fmt.Fprintf(w, ", in %s,", pv.Dir)
	}
	fmt.Fprintln(w, " would:")
	counts := printDecisions(w, pv.Decisions)
	fmt.Fprintf(w, "%s: %d to destroy, %d to keep", count(len(pv.Decisions), "instance"),
		counts[engine.ActionDestroy], counts[engine.ActionKeep])
	if n := counts[engine.ActionDestroyed]; n > 0 {
		fmt.Fprintf(w, ", %d already destroyed", n)
	}
	fmt.Fprintln(w, ".")
}

// printDecisions lists decisions as a table and counts them by action.
func printDecisions(w io.Writer, ds []engine.Decision) map[engine.Action]int {
	counts := map[engine.Action]int{}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, d := range ds {
		counts[d.Action]++
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", d.Action, d.Addr, d.Reason)
	}
	tw.Flush()
	return counts
}
