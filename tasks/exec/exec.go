// Package exec owns the exec task type: running one local command or shell script as a
// task, in its own process group, streaming its stdout and stderr to the task's Env while
// capturing them as outputs, and stopping the whole group when the engine cancels.
//
// It does not own scheduling, retries or timeouts: the engine does those and cancels the
// context passed to Run.
package exec

import (
	"context"
	"fmt"
	"strconv"

	"github.com/zclconf/go-cty/cty"

	"github.com/flowdev/flow/tasks"
	"github.com/flowdev/flow/tasks/internal/command"
)

// Exec runs a command (argv, no shell) or a script (by /bin/sh -c). It is the hcl config
// struct of the exec task type.
type Exec struct {
	Command         []string          `hcl:"command,optional" doc:"Program and arguments, run directly without a shell; the program is looked up in PATH unless it contains a slash. Exactly one of command and script is required."`
	Script          string            `hcl:"script,optional" doc:"Shell script run by /bin/sh -c. Exactly one of command and script is required."`
	Env             map[string]string `hcl:"env,optional" doc:"Environment variables added to (or overriding) the environment flow runs in."`
	Dir             string            `hcl:"dir,optional" doc:"Working directory; defaults to the directory flow runs in."`
	Stdin           string            `hcl:"stdin,optional" doc:"Text written to the command's standard input; empty means no input."`
	OkExitCodes     []int             `hcl:"ok_exit_codes,optional" doc:"Exit codes besides 0 that count as success."`
	SensitiveStdout bool              `hcl:"sensitive_stdout,optional" doc:"The command prints a secret (a kubeconfig, a token): its stdout is not shown or logged, and the stdout output is sensitive."`
	Undo            string            `hcl:"undo,optional" doc:"Shell script flow destroy runs (by /bin/sh -c, with env and dir) to undo what the task did, e.g. remove the directory it created; it must succeed when there is nothing left to undo. Without it flow destroy leaves the task's effects as they are."`
}

// Register adds the exec task type to r.
func Register(r *tasks.Registry) error { return r.Add(execType) }

// execType is the exec task type.
func execType() tasks.Type {
	return tasks.Type{
		Name:    "exec",
		Summary: "Run a local command or shell script",
		Doc: `Runs command (argv, without a shell) or script (with /bin/sh -c) in its own process group.
Its stdout and stderr are streamed as they are produced and also published as outputs,
trimmed of surrounding whitespace and capped at the first 64 KiB each.

An exit code other than 0 and those in ok_exit_codes fails the task. When the task is
cancelled (timeout, or flow is interrupted), the whole process group gets SIGTERM and,
after a grace period, SIGKILL. Processes the command leaves running after it exits
normally are not stopped.`,
		New: func() tasks.Task { return &Exec{} },
		Outputs: []tasks.Output{
			{Name: "exit_code", Type: cty.Number, Doc: "Exit code of the command; -1 if a signal ended it."},
			{Name: "stdout", Type: cty.String, Doc: "Standard output, trimmed of surrounding whitespace, first 64 KiB."},
			{Name: "stderr", Type: cty.String, Doc: "Standard error, trimmed of surrounding whitespace, first 64 KiB."},
		},
		Undo:     "flow destroy runs the task's undo script, when it has one; without it flow destroy cannot know what the command did and leaves it as it is.",
		UndoAttr: "undo",
		// What the undo script runs with: a change to one of them is another object,
		// so a run undoes the old one first; the command itself may read a secret.
		DestroyReads: []string{"undo", "env", "dir"},
		Example: `task "exec" "build" {
  command       = ["go", "build", "-o", "bin/flow", "."]
  dir           = "src"
  env           = { CGO_ENABLED = "0" }
  ok_exit_codes = [3]
}`,
	}
}

// Validate checks that exactly one of command and script is set, the command names a
// program, and env names are usable.
func (e *Exec) Validate() error {
	return command.Validate(e.Command, e.Script, e.Env)
}

// what names the command in messages: `command "go"` or `script`.
func (e *Exec) what() string {
	if e.Script != "" {
		return "script"
	}
	return "command " + strconv.Quote(e.Command[0])
}

// Destroy runs the undo script like a task's script; its stdout and stderr are streamed.
func (e *Exec) Destroy(ctx context.Context, env *tasks.Env, _ tasks.Outputs) error {
	if e.Undo == "" {
		return nil // the engine only destroys instances that set undo (UndoAttr)
	}
	_, err := (&Exec{Script: e.Undo, Env: e.Env, Dir: e.Dir}).Run(ctx, env)
	if err != nil {
		return fmt.Errorf("undo: %w", err)
	}
	return nil
}

var (
	_ tasks.Task      = (*Exec)(nil)
	_ tasks.Destroyer = (*Exec)(nil)
)
