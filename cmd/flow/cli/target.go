package cli

import "github.com/spf13/cobra"

// selectFlags are --target and --replace, on run, resume and plan.
type selectFlags struct {
	targets []string
	replace []string
}

func (s *selectFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringArrayVar(&s.targets, "target", nil,
		"only this instance, or a task's or module's instances, and what they depend on (repeatable)")
	cmd.Flags().StringArrayVar(&s.replace, "replace", nil,
		"run this instance (or a task's or module's instances) again even though it succeeded (repeatable)")
}

// selective reports whether the flags act on what an earlier run left.
func (s *selectFlags) selective() bool { return len(s.targets) > 0 || len(s.replace) > 0 }

// targetAddrs are the --target addresses, normalised.
func (s *selectFlags) targetAddrs() []string { return normalizeAll(s.targets) }

// replaceAddrs are the --replace addresses, normalised.
func (s *selectFlags) replaceAddrs() []string { return normalizeAll(s.replace) }

func normalizeAll(addrs []string) []string {
	out := make([]string, len(addrs))
	for i, a := range addrs {
		out[i] = normalizeAddress(a)
	}
	return out
}
