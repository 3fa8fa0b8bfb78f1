package lxd

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/canonical/lxd/shared/api"
	"github.com/zclconf/go-cty/cty"

	"github.com/flowdev/flow/tasks"
	"github.com/flowdev/flow/tasks/internal/command"
	"github.com/flowdev/flow/tasks/internal/output"
)

// Exec runs a command or shell script inside an LXD instance. It is the hcl
// config struct of the lxd_exec task type.
type Exec struct {
	Remote          map[string]string `hcl:"remote,optional" sensitive_keys:"trust_token" doc:"LXD server to use, as a map: address (https://HOST:PORT; empty = the local unix socket), socket, project, and for HTTPS the paths client_cert, client_key and server_cert, and trust_token (a single-use token of lxc config trust add, which makes the server trust client_cert and pins its certificate at server_cert on first contact; never recorded). Declare it once in locals and pass it to every task that uses it."`
	Instance        string            `hcl:"instance" doc:"Name of the running instance to run in."`
	Command         []string          `hcl:"command,optional" doc:"Program and arguments, run directly inside the instance (looked up in the instance's PATH). Exactly one of command and script is required."`
	Script          string            `hcl:"script,optional" doc:"Shell script run by /bin/sh -c inside the instance. Exactly one of command and script is required."`
	Env             map[string]string `hcl:"env,optional" doc:"Environment variables added to (or overriding) LXD's default environment for the command (PATH, HOME, USER, LANG)."`
	Cwd             string            `hcl:"cwd,optional" doc:"Absolute working directory inside the instance; default the user's home (/root)."`
	User            int               `hcl:"user,optional" doc:"Numeric user ID to run as; default 0 (root)."`
	Group           int               `hcl:"group,optional" doc:"Numeric group ID to run as; default 0 (root)."`
	Stdin           string            `hcl:"stdin,optional" doc:"Text written to the command's standard input; empty means no input."`
	OkExitCodes     []int             `hcl:"ok_exit_codes,optional" doc:"Exit codes besides 0 that count as success."`
	SensitiveStdout bool              `hcl:"sensitive_stdout,optional" doc:"The command prints a secret (a kubeconfig, a token): its stdout is not shown or logged, and the stdout output is sensitive."`
}

func execType() tasks.Type {
	return tasks.Type{
		Name:    "lxd_exec",
		Summary: "Run a command or shell script inside an LXD instance",
		Doc: `Runs command (argv) or script (with /bin/sh -c) inside a running instance, like
lxc exec. Its stdout and stderr are streamed as they are produced and also
published as outputs, trimmed of surrounding whitespace and capped at the first
64 KiB each. An exit code other than 0 and those in ok_exit_codes fails the task,
quoting the last line of stderr.

LXD ends the command only when every process holding its output has exited: a
background process the command starts must redirect its output (daemons that
detach, like busybox httpd, do), or the task waits for it.

When the task is cancelled (timeout, or flow is interrupted), the command gets
SIGTERM and, 10 s later, SIGKILL; the task returns once the command's output
ends, at the latest about 2 s after SIGKILL.
LXD itself signals only the command's main process, so flow also signals every
process in the instance whose environment holds the command's FLOW_EXEC_ID (its
children, unless they cleared their environment); that needs /bin/sh and grep in
the instance.

The command runs again on resume after a kill, so it must be idempotent.`,
		New: func() tasks.Task { return &Exec{} },
		Outputs: []tasks.Output{
			{Name: "exit_code", Type: cty.Number, Doc: "Exit code of the command; -1 if the task was cancelled before it ended."},
			{Name: "stdout", Type: cty.String, Doc: "Standard output, trimmed of surrounding whitespace, first 64 KiB."},
			{Name: "stderr", Type: cty.String, Doc: "Standard error, trimmed of surrounding whitespace, first 64 KiB."},
		},
		Undo: "Cannot be undone: flow destroy does not know what the command did; it goes with the instance when that is destroyed.",
		Example: `task "lxd_exec" "join" {
  remote   = local.lxd
  instance = "member2"
  script   = "microk8s join $JOIN_URL --worker"
  env      = { JOIN_URL = "10.0.0.2:25000/abc" }
  cwd      = "/root"
  ok_exit_codes = [3]
}`,
	}
}

// Validate checks the remote, that exactly one of command and script is set,
// env names, cwd and the user and group IDs.
func (e *Exec) Validate() error {
	if err := validateRemote(e.Remote); err != nil {
		return &tasks.AttrError{Attr: "remote", Err: err}
	}
	if err := instanceNameError(e.Instance); err != nil {
		return &tasks.AttrError{Attr: "instance", Err: err}
	}
	if err := command.Validate(e.Command, e.Script, e.Env); err != nil {
		return err
	}
	if e.Cwd != "" && !strings.HasPrefix(e.Cwd, "/") {
		return &tasks.AttrError{Attr: "cwd", Err: fmt.Errorf("%q must be an absolute path", e.Cwd)}
	}
	for attr, id := range map[string]int{"user": e.User, "group": e.Group} {
		if id < 0 || id > math.MaxUint32 {
			return &tasks.AttrError{Attr: attr, Err: fmt.Errorf("%d is not a valid numeric ID", id)}
		}
	}
	return nil
}

// Run runs run, again while it fails with a transient fault (see retry).
func (e *Exec) Run(ctx context.Context, env *tasks.Env) (tasks.Outputs, error) {
	return retry(ctx, env, e.run)
}

// run starts the command, streams and captures its output and waits for it.
// Once the command ran, the outputs are returned even with an error.
func (e *Exec) run(ctx context.Context, env *tasks.Env) (tasks.Outputs, error) {
	cp := *e
	cp.Remote = remoteIn(env, e.Remote)
	e = &cp // its local paths taken from env's directory
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("exec in %q: not started: %w", e.Instance, err)
	}
	srv, err := connect(ctx, e.Remote)
	if err != nil {
		return nil, fmt.Errorf("exec in %q: %w", e.Instance, err)
	}
	stdout, stderr := output.NewStdoutCapture(env.Stdout, e.SensitiveStdout), output.NewCapture(env.Stderr)
	run, err := startExec(srv, e.Remote, e.Instance, e.request(), e.Stdin, stdout, stderr)
	if isNotRunning(err) {
		// An instance that went down while the daemon restarted is started again;
		// one stopped through LXD is the user's doing and fails the task.
		started, serr := startIfLeftRunning(ctx, srv, e.Remote, e.Instance, env)
		switch {
		case serr != nil:
			return nil, fmt.Errorf("exec in %q: instance is not running: %w", e.Instance, serr)
		case !started:
			return nil, fmt.Errorf("exec in %q: instance is not running (it was stopped through LXD)", e.Instance)
		}
		run, err = startExec(srv, e.Remote, e.Instance, e.request(), e.Stdin, stdout, stderr)
	}
	if isNotFound(err) {
		return nil, fmt.Errorf("exec in %q: instance not found", e.Instance)
	}
	if err != nil {
		return nil, fmt.Errorf("exec in %q: %w", e.Instance, err)
	}
	code, waitErr := run.wait(ctx, env.Logger)
	out := tasks.Outputs{
		"exit_code": cty.NumberIntVal(int64(code)),
		"stdout":    stdout.Value(),
		"stderr":    cty.StringVal(stderr.String()),
	}
	switch {
	case ctx.Err() != nil:
		return out, fmt.Errorf("exec in %q: stopped: %w", e.Instance, ctx.Err())
	case errors.Is(waitErr, errProgramNotFound):
		return out, fmt.Errorf("exec in %q: program %q %w", e.Instance, e.request().Command[0], waitErr)
	case waitErr != nil:
		return out, fmt.Errorf("exec in %q: %w", e.Instance, waitErr)
	case code == 0 || slices.Contains(e.OkExitCodes, code):
		return out, nil
	}
	if line := lastLine(stderr.String()); line != "" {
		return out, &resultError{fmt.Errorf("exec in %q: exit code %d: %s", e.Instance, code, line)}
	}
	return out, &resultError{fmt.Errorf("exec in %q: exit code %d", e.Instance, code)}
}

// request builds the LXD exec request: non-interactive, with separate stdout
// and stderr, started once every stream is connected so no output is lost.
func (e *Exec) request() api.InstanceExecPost {
	argv := e.Command
	if e.Script != "" {
		argv = []string{"/bin/sh", "-c", e.Script}
	}
	return api.InstanceExecPost{
		Command:     argv,
		WaitForWS:   true,
		Environment: e.Env,
		Cwd:         e.Cwd,
		User:        uint32(e.User),
		Group:       uint32(e.Group),
	}
}

// lastLine returns the last non-empty line of s (already trimmed).
func lastLine(s string) string {
	return strings.TrimSpace(s[strings.LastIndexByte(s, '\n')+1:])
}

var _ tasks.Task = (*Exec)(nil)
