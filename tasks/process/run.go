package process

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	osexec "os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/zclconf/go-cty/cty"

	"github.com/flowdev/flow/tasks"
	"github.com/flowdev/flow/tasks/internal/command"
)

// recreateStopTimeout is how long a process replaced because of recreate has to exit
// after SIGTERM before it gets SIGKILL.
var recreateStopTimeout = 30 * time.Second

// running is the process a run works with: one it started or one already present.
type running struct {
	rec record
	// exited is closed when a process this run started has exited and been reaped;
	// status then says how. It is nil for a process found already running.
	exited <-chan struct{}
	status *string
	// logFrom is where this start's output begins in the log file.
	logFrom int64
}

// gone reports whether the process has exited, and how if known.
func (r *running) gone() (string, bool) {
	if r.exited != nil {
		select {
		case <-r.exited:
			return *r.status, true
		default:
			return "", false
		}
	}
	info, err := inspect(r.rec.PID)
	if err != nil || r.rec.matches(info) {
		return "", false
	}
	return "exited", true
}

// Run starts the process unless pid_file names it running already, then waits until it
// is ready. Cancelling ctx stops the wait, never the process.
func (p *Process) Run(ctx context.Context, env *tasks.Env) (tasks.Outputs, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	p = p.in(env)
	logFile, err := filepath.Abs(p.LogFile)
	if err != nil {
		return nil, fmt.Errorf("log_file %s: %w", p.LogFile, err)
	}
	out := stdout(env)
	r, err := p.ensure(ctx, out, logFile)
	if err != nil {
		return nil, err
	}
	if err := p.waitReady(ctx, out, r, logFile); err != nil {
		return nil, err
	}
	return tasks.Outputs{
		"pid":      cty.NumberIntVal(int64(r.rec.PID)),
		"log_file": cty.StringVal(logFile),
	}, nil
}

// ensure returns the process pid_file names if it runs this command, and otherwise
// starts one: over a stale pid file, or after stopping a different command if
// recreate is set.
func (p *Process) ensure(ctx context.Context, out io.Writer, logFile string) (*running, error) {
	rec, ok, err := readRecord(p.PIDFile)
	if err != nil {
		return nil, fmt.Errorf("start %q: %w", p.program(), err)
	}
	if ok {
		info, err := inspect(rec.PID)
		if err != nil {
			return nil, fmt.Errorf("start %q: %w", p.program(), err)
		}
		switch {
		case !rec.matches(info):
			fmt.Fprintf(out, "pid file %s is stale: %s no longer runs; replacing it\n", p.PIDFile, rec.label())
		case slices.Equal(rec.Argv, p.Command):
			fmt.Fprintf(out, "%s already present\n", rec.label())
			return &running{rec: rec}, nil
		case !p.Recreate:
			return nil, fmt.Errorf("start %q: pid file %s names %s running %s, not %s; set recreate = true to replace it",
				p.program(), p.PIDFile, rec.label(), argvString(rec.Argv), argvString(p.Command))
		default:
			fmt.Fprintf(out, "%s runs %s, not %s; recreating it\n", rec.label(), argvString(rec.Argv), argvString(p.Command))
			if err := stop(ctx, out, rec, syscall.SIGTERM, recreateStopTimeout); err != nil {
				return nil, err
			}
		}
	}
	return p.start(ctx, out, logFile)
}

// start launches the process in a new session with its output appended to logFile,
// records it in pid_file and reaps it in the background should it exit while flow runs.
func (p *Process) start(ctx context.Context, out io.Writer, logFile string) (*running, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("start %q: %w", p.program(), err)
	}
	log, logFrom, err := openLog(logFile)
	if err != nil {
		return nil, fmt.Errorf("start %q: %w", p.program(), err)
	}
	program, err := p.resolveProgram()
	if err != nil {
		_ = log.Close()
		return nil, p.startError(err)
	}
	gate, release, err := os.Pipe()
	if err != nil {
		_ = log.Close()
		return nil, fmt.Errorf("start %q: %w", p.program(), err)
	}
	cmd := p.command(log, program, gate)
	err = cmd.Start()
	_ = log.Close() // the process has its own descriptors
	_ = gate.Close()
	if err != nil {
		_ = release.Close()
		return nil, p.startError(err)
	}
	defer release.Close() // unreleased: the gate reads EOF and the program never runs
	pid := cmd.Process.Pid
	info, err := inspect(pid) // not reaped yet, so readable even if it exited already
	if err == nil && info.Start == 0 {
		err = errors.New("no start time in /proc")
	}
	rec := record{PID: pid, Argv: p.Command, Start: info.Start, BootID: bootID()}
	if err == nil {
		err = writeRecord(p.PIDFile, rec)
	}
	if err == nil {
		_, err = io.WriteString(release, "go\n")
	}
	if err != nil {
		// Unrecorded, nothing could ever find or stop it.
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		_ = cmd.Wait()
		return nil, fmt.Errorf("start %q: %w", p.program(), err)
	}
	exited := make(chan struct{})
	status := new(string)
	go func() {
		_ = cmd.Wait()
		*status = exitStatus(cmd.ProcessState)
		close(exited)
	}()
	fmt.Fprintf(out, "started %s, logging to %s\n", rec.label(), logFile)
	return &running{rec: rec, exited: exited, status: status, logFrom: logFrom}, nil
}

// openLog opens path for appending, creating it and its directory, marks where this
// start begins and returns the offset of what the process will write.
func openLog(path string) (*os.File, int64, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, 0, fmt.Errorf("open log_file: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, 0, fmt.Errorf("open log_file: %w", err)
	}
	_, err = fmt.Fprintf(f, "--- started by flow at %s ---\n", time.Now().UTC().Format(time.RFC3339))
	var offset int64
	if err == nil {
		offset, err = f.Seek(0, io.SeekEnd)
	}
	if err != nil {
		_ = f.Close()
		return nil, 0, fmt.Errorf("write log_file %s: %w", path, err)
	}
	return f, offset, nil
}

// gateScript holds the program back until flow has recorded it in the pid file: the
// shell runs it (same pid, same start time) only after reading "go" on fd 3. A flow
// killed between the start and the pid file closes the pipe instead, and nothing
// unrecorded is left running to hold ports a resumed run needs.
const gateScript = `IFS= read -r go <&3 && [ "$go" = go ] && exec "$@" 3<&-`

// command builds the detached process: a new session (so neither a terminal's signals
// nor flow's exit reach it), stdin from /dev/null, stdout and stderr to log, and the
// program behind the gate read from gate.
func (p *Process) command(log *os.File, program string, gate *os.File) *osexec.Cmd {
	args := append([]string{"-c", gateScript, "flow-process-gate", program}, p.Command[1:]...)
	cmd := osexec.Command("/bin/sh", args...)
	cmd.ExtraFiles = []*os.File{gate}
	cmd.Dir = p.Dir
	if len(p.Env) > 0 {
		cmd.Env = os.Environ()
		names := make([]string, 0, len(p.Env))
		for n := range p.Env {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			cmd.Env = append(cmd.Env, n+"="+p.Env[n]) // later entries win
		}
	}
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	return cmd
}

// resolveProgram finds the program as exec would (PATH for a bare name, dir for a
// relative path), so that a missing or non-executable program fails the start
// instead of the gate.
func (p *Process) resolveProgram() (string, error) {
	prog := p.Command[0]
	if !strings.Contains(prog, "/") {
		return osexec.LookPath(prog)
	}
	path := prog
	if !filepath.IsAbs(path) && p.Dir != "" {
		path = filepath.Join(p.Dir, path)
	}
	fi, err := os.Stat(path)
	switch {
	case err != nil:
		return "", err
	case fi.IsDir() || fi.Mode()&0o111 == 0:
		return "", &fs.PathError{Op: "exec", Path: prog, Err: fs.ErrPermission}
	}
	return prog, nil
}

// startError turns a failed start into `start "prog": reason`.
func (p *Process) startError(err error) error {
	err = command.StartCause(p.Dir, err)
	return fmt.Errorf("start %q: %w", p.program(), err)
}

// exitStatus says how a reaped process ended.
func exitStatus(st *os.ProcessState) string {
	if st == nil {
		return "exited"
	}
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return "was killed by signal " + ws.Signal().String()
	}
	return fmt.Sprintf("exited with code %d", st.ExitCode())
}
