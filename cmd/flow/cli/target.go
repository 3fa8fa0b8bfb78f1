package cli

import (
	"github.com/spf13/cobra"

	"github.com/flowdev/flow/engine"
)

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

// selectFrom normalises the addresses and returns the part of p the targets select.
func (s *selectFlags) selectFrom(p *engine.Plan) (*engine.Plan, error) {
	for i, a := range s.replace {
		s.replace[i] = normalizeAddress(a)
	}
	if err := p.CheckAddresses("--replace", s.replace); err != nil {
		return nil, err
	}
	if len(s.targets) == 0 {
		return p, nil
	}
	for i, a := range s.targets {
		s.targets[i] = normalizeAddress(a)
	}
	return p.Select(s.targets)
}
