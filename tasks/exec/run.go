package exec

import (
	"context"

	"github.com/zclconf/go-cty/cty"

	"github.com/flowdev/flow/tasks"
	"github.com/flowdev/flow/tasks/internal/command"
	"github.com/flowdev/flow/tasks/internal/output"
)

// Run starts the command in its own process group, streams and captures its output and
// waits for it. On cancellation it stops the whole group (SIGTERM, SIGKILL after
// command.KillGrace) and returns an error wrapping ctx.Err(). Once the process ran, the
// outputs are returned even with an error.
func (e *Exec) Run(ctx context.Context, env *tasks.Env) (tasks.Outputs, error) {
	stdout, stderr := output.NewStdoutCapture(env.Stdout, e.SensitiveStdout), output.NewCapture(env.Stderr)
	argv := e.Command
	if e.Script != "" {
		argv = []string{"/bin/sh", "-c", e.Script}
	}
	cmd := &command.Cmd{Argv: argv, Dir: env.WorkDir(e.Dir), Env: e.Env, Stdin: e.Stdin,
		Stdout: stdout, Stderr: stderr, What: e.what(), Log: env.Logger, Started: env.Started}
	res, err := cmd.Run(ctx)
	if err != nil {
		return nil, err
	}
	if env.Logger != nil {
		for name, c := range map[string]*output.Capture{"stdout": stdout, "stderr": stderr} {
			if err := c.StreamErr(); err != nil {
				env.Logger.Debug("streaming stopped after a write error", "stream", name, "error", err)
			}
		}
	}
	out := tasks.Outputs{
		"exit_code": cty.NumberIntVal(int64(res.ExitCode)),
		"stdout":    stdout.Value(),
		"stderr":    cty.StringVal(stderr.String()),
	}
	return out, res.Err(ctx, e.what(), e.OkExitCodes)
}
