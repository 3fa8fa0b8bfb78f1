package process

import (
	"context"
	"errors"
	"fmt"
	"io"
	"syscall"
	"time"

	"github.com/zclconf/go-cty/cty"

	"github.com/flowdev/flow/tasks"
)

// ProcessStop stops the process a pid file written by the process task names. It is
// the hcl config struct of the process_stop task type.
type ProcessStop struct {
	PIDFile     string         `hcl:"pid_file" doc:"Pid file the process task wrote. A missing file, or one naming a process that no longer runs, means the process is already stopped."`
	Signal      string         `hcl:"signal,optional" doc:"Signal sent first: HUP, INT, QUIT, KILL, TERM, USR1 or USR2 (a SIG prefix is allowed); default \"TERM\"."`
	StopTimeout tasks.Duration `hcl:"stop_timeout,optional" doc:"How long the process has to exit after the signal before it gets SIGKILL; default \"30s\"."`
}

// stopType is the process_stop task type.
func stopType() tasks.Type {
	return tasks.Type{
		Name:    "process_stop",
		Summary: "Stop a process started by the process task",
		Doc: `Reads pid_file, sends signal to the process it names (to its whole process group,
which the process task gives each process it starts), waits up to stop_timeout for it to
exit, then sends SIGKILL. The pid file is removed afterwards.

A missing pid file, or one whose process no longer runs, means "already stopped". A pid
that now belongs to another process (one that started at another time or in another
boot than the pid file recorded) is left alone; the command line is not compared, so a
wrapper that exec'd its program is still stopped.`,
		New: func() tasks.Task { return &ProcessStop{} },
		Outputs: []tasks.Output{
			{Name: "stopped", Type: cty.Bool, Doc: "Whether a process was running and was stopped; false when it was already stopped."},
		},
		Undo: "Not undone: a process it stopped stays stopped.",
		Example: `task "process_stop" "apiserver" {
  pid_file     = "run/karmada-apiserver.pid"
  signal       = "TERM"
  stop_timeout = "20s"
}`,
	}
}

// Validate checks that pid_file is set, the signal is known and stop_timeout parses.
func (s *ProcessStop) Validate() error {
	if s.PIDFile == "" {
		return &tasks.AttrError{Attr: "pid_file", Err: errors.New("must not be empty")}
	}
	if _, err := s.signal(); err != nil {
		return err
	}
	_, err := s.timeout()
	return err
}

// Run stops the process if it runs and removes the pid file.
func (s *ProcessStop) Run(ctx context.Context, env *tasks.Env) (tasks.Outputs, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	in := *s
	in.PIDFile, s = env.InDir(s.PIDFile), &in
	out := stdout(env)
	sig, _ := s.signal()
	timeout, _ := s.timeout()
	rec, ok, err := readRecord(s.PIDFile)
	if err != nil {
		return nil, err
	}
	if !ok {
		fmt.Fprintf(out, "process of %s already stopped (no pid file)\n", s.PIDFile)
		return stopped(false), nil
	}
	info, err := inspect(rec.PID)
	if err != nil {
		return nil, err
	}
	if !rec.matches(info) {
		fmt.Fprintf(out, "%s already stopped\n", rec.label())
		return stopped(false), removeRecord(s.PIDFile)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("stop %s: %w", rec.label(), err)
	}
	if err := stop(ctx, out, rec, sig, timeout); err != nil {
		return nil, err
	}
	if err := removeRecord(s.PIDFile); err != nil {
		return nil, err
	}
	return stopped(true), nil
}

func stopped(b bool) tasks.Outputs { return tasks.Outputs{"stopped": cty.BoolVal(b)} }

func (s *ProcessStop) signal() (syscall.Signal, error) {
	name := s.Signal
	if name == "" {
		name = "TERM"
	}
	sig, ok := parseSignal(name)
	if !ok {
		return 0, &tasks.AttrError{Attr: "signal", Err: fmt.Errorf("unknown signal %q; want one of HUP, INT, QUIT, KILL, TERM, USR1, USR2", name)}
	}
	return sig, nil
}

func (s *ProcessStop) timeout() (time.Duration, error) {
	return s.StopTimeout.Positive("stop_timeout", 30*time.Second)
}

// stdout is where progress goes; an Env without one discards it.
func stdout(env *tasks.Env) io.Writer {
	if env == nil || env.Stdout == nil {
		return io.Discard
	}
	return env.Stdout
}

var _ tasks.Task = (*ProcessStop)(nil)

// Destroy stops the process as process_stop does and removes its pid file; the log
// file stays.
func (p *Process) Destroy(ctx context.Context, env *tasks.Env, _ tasks.Outputs) error {
	_, err := (&ProcessStop{PIDFile: p.PIDFile}).Run(ctx, env)
	return err
}

var _ tasks.Destroyer = (*Process)(nil)
