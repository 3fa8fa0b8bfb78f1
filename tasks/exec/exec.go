// Package exec owns the exec task type: running one local command or shell script as a
// task, in its own process group, streaming its stdout and stderr to the task's Env while
// capturing them as outputs, and stopping the whole group when the engine cancels.
//
// It does not own scheduling, retries or timeouts: the engine does those and cancels the
// context passed to Run.
package exec

import (
	"strconv"

	"github.com/zclconf/go-cty/cty"

	"github.com/flowdev/flow/tasks"
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
}

// Register adds the exec task type to r.
func Register(r *tasks.Registry) error {
	return r.Register(tasks.Type{
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
		Undo: "Cannot be undone: flow destroy does not know what a command or script did, so it leaves it as it is. Undo it with tasks of a type that can be, or by hand.",
		Example: `task "exec" "build" {
  command       = ["go", "build", "-o", "bin/flow", "."]
  dir           = "src"
  env           = { CGO_ENABLED = "0" }
  ok_exit_codes = [3]
}`,
	})
}

// Validate checks that exactly one of command and script is set, the command names a
// program, and env names are usable.
func (e *Exec) Validate() error {
	return tasks.ValidateCommand(e.Command, e.Script, e.Env)
}

// what names the command in messages: `command "go"` or `script`.
func (e *Exec) what() string {
	if e.Script != "" {
		return "script"
	}
	return "command " + strconv.Quote(e.Command[0])
}

var _ tasks.Task = (*Exec)(nil)
