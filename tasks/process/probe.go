package process

import (
	"context"
	"fmt"
	"slices"

	"github.com/flowdev/flow/tasks"
)

// Probe reports the process its pid file names gone, replaced by another, or running
// another command: a reboot or a kill since the run.
func (p *Process) Probe(_ context.Context, env *tasks.Env, _ tasks.Outputs) (string, error) {
	rec, ok, err := readRecord(env.InDir(p.PIDFile))
	if err != nil {
		return "", err
	}
	if !ok {
		return fmt.Sprintf("pid file %s is gone", p.PIDFile), nil
	}
	info, err := inspect(rec.PID)
	switch {
	case err != nil:
		return "", err
	case !rec.matches(info):
		return fmt.Sprintf("%s no longer runs", rec.label()), nil
	case !slices.Equal(rec.Argv, p.Command):
		return fmt.Sprintf("%s runs %s, not %s", rec.label(), argvString(rec.Argv), argvString(p.Command)), nil
	}
	return "", nil
}

var _ tasks.Prober = (*Process)(nil)
