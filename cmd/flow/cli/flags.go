package cli

import "github.com/spf13/cobra"

// addParallelism adds --parallelism (default 10) to cmd, and checks before the command
// runs that it is at least 1: 0 or less is a usage error naming the flag, on every
// command that takes it, before anything is opened or created.
func addParallelism(cmd *cobra.Command, p *int, usage string) {
	cmd.Flags().IntVar(p, "parallelism", 10, usage)
	cmd.PreRunE = func(cmd *cobra.Command, args []string) error {
		if *p < 1 {
			return failf(ExitInvalid, "--parallelism must be at least 1, got %d (see %s --help)", *p, cmd.CommandPath())
		}
		return nil
	}
}

// addMovedFlow adds --flow, for a run whose flow moved, to resume and destroy.
func (c *CLI) addMovedFlow(cmd *cobra.Command) {
	cmd.Flags().StringVar(&c.movedFlow, "flow", "",
		"where the run's flow is now, if it moved (its working directory follows it when the old one is gone)")
}
