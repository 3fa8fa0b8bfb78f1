package cli

import "github.com/spf13/cobra"

// selectFlags are --target, --replace and --refresh, on run, resume and plan.
type selectFlags struct {
	targets []string
	replace []string
	refresh bool
}

func (s *selectFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringArrayVar(&s.targets, "target", nil,
		"only this instance, or a task's or module's instances, and what they depend on (repeatable)")
	cmd.Flags().StringArrayVar(&s.replace, "replace", nil,
		"run this instance (or a task's or module's instances) again even though it succeeded; undo it first when its type can (repeatable)")
	cmd.Flags().BoolVar(&s.refresh, "refresh", true,
		"before trusting a recorded success, look whether its object is still there (an instance running, a proxy's port, a file's content, a Kubernetes object) and run again what drifted; --refresh=false trusts the records")
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
