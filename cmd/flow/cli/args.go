package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

// exactArgs accepts n positional arguments, named names in the messages, and refuses
// more or fewer as a usage error.
func exactArgs(n int, names string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		switch {
		case len(args) > n && n == 0:
			return failf(ExitInvalid, "%s takes no arguments; %s", cmd.CommandPath(), extraArgs(args))
		case len(args) > n:
			return failf(ExitInvalid, "%s takes %s only; %s (see --help)", cmd.CommandPath(), names, extraArgs(args[n:]))
		case len(args) < n:
			return failf(ExitInvalid, "%s needs %s (see --help)", cmd.CommandPath(), names)
		}
		return nil
	}
}

// extraArgs names the arguments a command does not take.
func extraArgs(extra []string) string {
	q := make([]string, len(extra))
	for i, a := range extra {
		q[i] = fmt.Sprintf("%q", a)
	}
	if len(q) == 1 {
		return "extra argument " + q[0]
	}
	return "extra arguments " + strings.Join(q, ", ")
}
