// Package command runs one local program the way flow's tasks do: in its own process
// group (with Pdeathsig, so a killed flow takes it along), its stdout and stderr
// streamed to writers through pipes it owns, and the whole group stopped — SIGTERM,
// then SIGKILL after KillGrace — when the context ends.
//
// It does not own what a task makes of the result (outputs, which exit codes count as
// success): the exec task type and the karmadactl tasks decide that.
package command

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	osexec "os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/flowdev/flow/internal/procgroup"
)

// KillGrace is how long a cancelled command's process group has to exit after SIGTERM
// before it gets SIGKILL.
var KillGrace = 10 * time.Second

// PipeDrain is how long Run keeps reading stdout and stderr after the command exited
// while a process it left behind still holds them open; then it closes them and returns.
const PipeDrain = time.Second

// Cmd is one program to run.
type Cmd struct {
	Argv  []string          // program and arguments; the program is looked up in PATH
	Dir   string            // working directory; "" is flow's
	Env   map[string]string // added to (or overriding) flow's environment
	Stdin string            // written to standard input; "" is none
	// Stdout and Stderr receive the output as it is produced.
	Stdout, Stderr io.Writer
	// What names the command in errors: `command "go"`, `script`.
	What string
	Log  hclog.Logger // nil logs nothing; argv is logged only at debug level
	// Started, when set, is told the process group (the pid) and its start time once
	// the command started, and (0, 0) once it ended (see tasks.Env.Started).
	Started func(group int, start uint64)
}

// Result is how a started process ended.
type Result struct {
	ExitCode  int  // -1 when a signal ended it
	Cancelled bool // ctx ended and Run stopped the process group
	state     *os.ProcessState
	waitErr   error
}

// Run starts the command and waits for it and for its output. The error is non-nil
// only when the command could not be started (`start "prog": reason`).
func (c *Cmd) Run(ctx context.Context) (Result, error) {
	log := c.Log
	if log == nil {
		log = hclog.NewNullLogger()
	}
	if err := ctx.Err(); err != nil {
		return Result{}, fmt.Errorf("%s not started: %w", c.What, err)
	}
	pipes, err := newOutputPipes()
	if err != nil {
		return Result{}, err
	}
	cmd, cached := c.command(pipes.writers[0], pipes.writers[1])
	if log.IsDebug() {
		log.Debug("starting command", "argv", cmd.Args, "dir", cmd.Dir, "env_names", envNames(c.Env))
	}
	err = cmd.Start()
	if err != nil && cached && errors.Is(err, fs.ErrNotExist) {
		// The cached program went since: look it up again, as a shell does.
		forgetProgram(c.Argv[0])
		cmd, _ = c.command(pipes.writers[0], pipes.writers[1])
		err = cmd.Start()
	}
	if err != nil {
		pipes.closeAll()
		return Result{}, c.startError(err)
	}
	pipes.start(c.Stdout, c.Stderr)
	pid := cmd.Process.Pid
	log.Debug("command started", "pid", pid)
	untrack := procgroup.Track(pid)
	defer untrack()
	if c.Started != nil {
		info, _ := procgroup.Inspect(pid)
		c.Started(pid, info.Start)
		defer c.Started(0, 0)
	}

	// The group is stopped from a goroutine of its own only once ctx ends: a command
	// that ends first costs no goroutine and no wake-up for it.
	stopped := make(chan struct{})
	stopAfterCancel := context.AfterFunc(ctx, func() {
		defer close(stopped)
		stopGroup(pid, KillGrace, log)
	})
	waitErr := cmd.Wait()
	res := Result{ExitCode: -1, state: cmd.ProcessState, waitErr: waitErr}
	if !stopAfterCancel() { // ctx ended before the command did
		<-stopped
		res.Cancelled = true
	}
	if pipes.drain(PipeDrain) {
		log.Debug("output still held open by a leftover process; stopped reading it", "after", PipeDrain)
	}
	if cmd.ProcessState != nil {
		res.ExitCode = cmd.ProcessState.ExitCode()
	}
	log.Debug("command exited", "pid", pid, "exit_code", res.ExitCode)
	return res, nil
}

// Err judges a finished process: nil for exit code 0 or one of ok; otherwise the
// cancellation (wrapping ctx.Err()), the signal or the exit code, naming the command.
func (r Result) Err(ctx context.Context, what string, ok []int) error {
	var exitErr *osexec.ExitError
	switch {
	case r.Cancelled:
		return fmt.Errorf("%s stopped: %w", what, ctx.Err())
	case r.waitErr != nil && !errors.As(r.waitErr, &exitErr):
		return fmt.Errorf("wait for %s: %w", what, r.waitErr)
	case r.state == nil:
		return fmt.Errorf("wait for %s: no exit status", what)
	}
	if ws, isWS := r.state.Sys().(syscall.WaitStatus); isWS && ws.Signaled() {
		return fmt.Errorf("%s killed by signal %s", what, ws.Signal())
	}
	if r.ExitCode == 0 || slices.Contains(ok, r.ExitCode) {
		return nil
	}
	return fmt.Errorf("%s exited with code %d", what, r.ExitCode)
}

// command builds the process; it always runs in a new process group. Its output goes
// to pipe ends (*os.File), so os/exec adds no copying of its own.
func (c *Cmd) command(stdout, stderr *os.File) (cmd *osexec.Cmd, cached bool) {
	argv := c.Argv
	if path, hit, ok := cachedLookPath(argv[0]); ok {
		cmd, cached = &osexec.Cmd{Path: path, Args: argv}, hit
	} else {
		cmd = osexec.Command(argv[0], argv[1:]...) // resolves, or records why it cannot
	}
	cmd.Dir = c.Dir
	if len(c.Env) > 0 {
		cmd.Env = os.Environ()
		for _, name := range envNames(c.Env) {
			cmd.Env = append(cmd.Env, name+"="+c.Env[name]) // later entries win
		}
	}
	if c.Stdin != "" {
		cmd.Stdin = strings.NewReader(c.Stdin)
	} else if null, err := devNull(); err == nil {
		cmd.Stdin = null // else os/exec opens /dev/null itself
	}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	// Pdeathsig: a SIGKILLed flow takes the program with it, so a resume never races
	// a leftover copy (what the program started itself may still outlive it).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	return cmd, cached
}

// devNull is /dev/null, opened once and shared as every command's empty stdin: os/exec
// would open and close it for each command.
var devNull = sync.OnceValues(func() (*os.File, error) { return os.Open(os.DevNull) })

// startError turns a failed start into `start "prog": reason` (`start script: ...`).
func (c *Cmd) startError(err error) error {
	err = StartCause(c.Dir, err)
	if c.What == "script" {
		return fmt.Errorf("start script: %w", err)
	}
	return fmt.Errorf("start %q: %w", c.Argv[0], err)
}

// envNames returns the names of env, sorted; only names are ever logged.
func envNames(env map[string]string) []string {
	return slices.Sorted(maps.Keys(env))
}
