package cli

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/flowdev/flow/engine"
)

func (c *CLI) stateCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "state",
		Short: "Show who holds a state, or move a state between a file and PostgreSQL",
		Long: `A state is a file (the default, for one machine) or a PostgreSQL URL
(--state postgres://USER@HOST:PORT/DB?state=NAME, for a team; see docs/state.md).`,
		Example: "  flow state lock --state postgres://flow@db.lab:5432/flow?state=lab\n" +
			"  flow state migrate --state .flow/lab.db --to postgres://flow@db.lab:5432/flow?state=lab",
	}
	cmd.AddCommand(c.stateLockCmd(), c.stateMigrateCmd())
	return cmd
}

func (c *CLI) stateLockCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "lock",
		Short: "Show whether a running flow holds the state, and who",
		Long: `Shows whether a flow holds the state's writer lock now, and its host, pid, user
and start time. A PostgreSQL state's lock lives in the holder's database session:
it ends when that process or its connection ends, so it never needs breaking by hand.`,
		Example: "  flow state lock\n  flow state lock --json --state postgres://flow@db.lab/flow?state=lab",
		Args:    exactArgs(0, ""),
		RunE: func(cmd *cobra.Command, args []string) error {
			info, err := engine.StateLock(c.state())
			if err != nil {
				return failf(ExitInvalid, "%v", err)
			}
			info.Location = engine.ShowState(info.Location)
			if asJSON {
				enc := json.NewEncoder(c.stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(info)
			}
			fmt.Fprintln(c.stdout, lockLine(info))
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object")
	return cmd
}

func lockLine(info *engine.LockInfo) string {
	h := info.Holder
	switch {
	case info.Held && h != nil && h.Host != "":
		return fmt.Sprintf("%s: held by %s", info.Location, h)
	case info.Held && h != nil:
		return fmt.Sprintf("%s: held by flow process %d", info.Location, h.PID)
	case info.Held:
		return fmt.Sprintf("%s: held by another flow process", info.Location)
	case h != nil && h.Host != "":
		return fmt.Sprintf("%s: not held (last held by flow on host %s, pid %d, user %s, from %s)",
			info.Location, h.Host, h.PID, h.User, h.Started.Local().Format(time.RFC3339))
	}
	return fmt.Sprintf("%s: not held", info.Location)
}

func (c *CLI) stateMigrateCmd() *cobra.Command {
	var to string
	cmd := &cobra.Command{
		Use:   "migrate --to URL|FILE",
		Short: "Copy the state to PostgreSQL (or back to a file), verified",
		Long: `Copies every run, instance record and captured log of the state (--state, or the
one flow finds) to a new state: a PostgreSQL URL or a file. The destination must hold
no runs. The source is locked during the copy and left untouched until the copy reads
back equal; then it is marked as moved, and refuses writers from then on (naming
the destination) while reads still work. The copy keeps the source's lineage id.`,
		Example: "  flow state migrate --state .flow/lab.db --to postgres://flow@db.lab:5432/flow?state=lab\n" +
			"  flow state migrate --state 'postgres://flow@db.lab/flow?state=lab' --to .flow/lab.db",
		Args: exactArgs(0, ""),
		RunE: func(cmd *cobra.Command, args []string) error {
			if to == "" {
				return failf(ExitInvalid, "flow state migrate needs --to, the new state's URL or file")
			}
			res, err := engine.MigrateState(c.state(), to)
			if err != nil {
				return failf(ExitInvalid, "%v", err)
			}
			fmt.Fprintf(c.stdout, "Copied %s, %s and %s from %s to %s (lineage %s).\n",
				count(res.Runs, "run"), count(res.Instances, "instance record"), count(res.Logs, "log"),
				engine.ShowState(c.state()), engine.ShowState(to), res.Lineage)
			fmt.Fprintf(c.stdout, "%s is kept, read-only; use --state %s from now on.\n", engine.ShowState(c.state()), engine.ShowState(to))
			return nil
		},
	}
	cmd.Flags().StringVar(&to, "to", "", "the new state: postgres://... or a file path")
	return cmd
}
