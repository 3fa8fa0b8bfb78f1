package exec

import (
	"context"
	"errors"
	"fmt"
	"os"
	osexec "os/exec"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/zclconf/go-cty/cty"

	"github.com/flowdev/flow/tasks"
)

// KillGrace is how long a cancelled command's process group has to exit after SIGTERM
// before it gets SIGKILL.
var KillGrace = 10 * time.Second

// pipeDrain is how long Run keeps reading stdout and stderr after the command exited while
// a process it left behind still holds them open; then it closes them and returns.
const pipeDrain = time.Second

// Run starts the command in its own process group, streams and captures its output and
// waits for it. On cancellation it stops the whole group (SIGTERM, SIGKILL after
// KillGrace) and returns an error wrapping ctx.Err(). Once the process ran, the outputs
// are returned even with an error.
func (e *Exec) Run(ctx context.Context, env *tasks.Env) (tasks.Outputs, error) {
	log := env.Logger
	if log == nil {
		log = hclog.NewNullLogger()
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("%s not started: %w", e.what(), err)
	}
	stdout, stderr := tasks.NewStdoutCapture(env.Stdout, e.SensitiveStdout), tasks.NewCapture(env.Stderr)
	pipes, err := newOutputPipes()
	if err != nil {
		return nil, err
	}
	cmd := e.command(pipes.writers[0], pipes.writers[1])
	log.Debug("starting command", "argv", cmd.Args, "dir", cmd.Dir, "env_names", envNames(e.Env))
	if err := cmd.Start(); err != nil {
		pipes.closeAll()
		return nil, e.startError(err)
	}
	pipes.start(stdout, stderr)
	pid := cmd.Process.Pid
	log.Debug("command started", "pid", pid)

	exited := make(chan struct{})
	stopped := make(chan bool, 1)
	go func() { stopped <- stopOnCancel(ctx, pid, KillGrace, exited, log) }()
	waitErr := cmd.Wait()
	close(exited)
	cancelled := <-stopped
	if pipes.drain(pipeDrain) {
		log.Debug("output still held open by a leftover process; stopped reading it", "after", pipeDrain)
	}

	code := -1
	if cmd.ProcessState != nil {
		code = cmd.ProcessState.ExitCode()
	}
	log.Debug("command exited", "pid", pid, "exit_code", code, "stdout_truncated", stdout.Truncated(), "stderr_truncated", stderr.Truncated())
	for name, c := range map[string]*tasks.Capture{"stdout": stdout, "stderr": stderr} {
		if err := c.StreamErr(); err != nil {
			log.Debug("streaming stopped after a write error", "stream", name, "error", err)
		}
	}
	out := tasks.Outputs{
		"exit_code": cty.NumberIntVal(int64(code)),
		"stdout":    stdout.Value(),
		"stderr":    cty.StringVal(stderr.String()),
	}
	if cancelled {
		return out, fmt.Errorf("%s stopped: %w", e.what(), ctx.Err())
	}
	return out, e.result(waitErr, cmd.ProcessState, log)
}

// command builds the process; it always runs in a new process group. Its output goes to
// pipe ends (*os.File), so os/exec adds no copying of its own.
func (e *Exec) command(stdout, stderr *os.File) *osexec.Cmd {
	argv := e.Command
	if e.Script != "" {
		argv = []string{"/bin/sh", "-c", e.Script}
	}
	var cmd *osexec.Cmd
	if path, ok := cachedLookPath(argv[0]); ok {
		cmd = &osexec.Cmd{Path: path, Args: argv}
	} else {
		cmd = osexec.Command(argv[0], argv[1:]...) // resolves, or records why it cannot
	}
	cmd.Dir = e.Dir
	if len(e.Env) > 0 {
		cmd.Env = os.Environ()
		for _, name := range envNames(e.Env) {
			cmd.Env = append(cmd.Env, name+"="+e.Env[name]) // later entries win
		}
	}
	if e.Stdin != "" {
		cmd.Stdin = strings.NewReader(e.Stdin)
	}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	// Pdeathsig: a SIGKILLed flow takes the program with it, so a resume never races
	// a leftover copy (what the program started itself may still outlive it).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	return cmd
}

// startError turns a failed start into `start "prog": reason`.
func (e *Exec) startError(err error) error {
	err = tasks.StartCause(e.Dir, err)
	if e.Script != "" {
		return fmt.Errorf("start script: %w", err)
	}
	return fmt.Errorf("start %q: %w", e.Command[0], err)
}

// result judges a finished, uncancelled process.
func (e *Exec) result(waitErr error, st *os.ProcessState, log hclog.Logger) error {
	var exitErr *osexec.ExitError
	switch {
	case waitErr != nil && !errors.As(waitErr, &exitErr):
		return fmt.Errorf("wait for %s: %w", e.what(), waitErr)
	}
	if st == nil {
		return fmt.Errorf("wait for %s: no exit status", e.what())
	}
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return fmt.Errorf("%s killed by signal %s", e.what(), ws.Signal())
	}
	code := st.ExitCode()
	if code == 0 || slices.Contains(e.OkExitCodes, code) {
		return nil
	}
	return fmt.Errorf("%s exited with code %d", e.what(), code)
}

// envNames returns the names of env, sorted; only names are ever logged.
func envNames(env map[string]string) []string {
	names := make([]string, 0, len(env))
	for n := range env {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
