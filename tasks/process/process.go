package process

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/zclconf/go-cty/cty"

	"github.com/flowdev/flow/tasks"
	"github.com/flowdev/flow/tasks/internal/command"
)

// Process starts a long-running program detached from flow and waits until it is
// ready. It is the hcl config struct of the process task type.
type Process struct {
	Command      []string          `hcl:"command" doc:"Program and arguments, run directly without a shell; the program is looked up in PATH unless it contains a slash."`
	Env          map[string]string `hcl:"env,optional" doc:"Environment variables added to (or overriding) the environment flow runs in."`
	Dir          string            `hcl:"dir,optional" doc:"Working directory; defaults to the directory flow runs in."`
	PIDFile      string            `hcl:"pid_file" doc:"File that records the pid, command, start time and boot of the process, written atomically; its directory is created. process_stop reads it."`
	LogFile      string            `hcl:"log_file" doc:"File the process's stdout and stderr are appended to; its directory is created."`
	ReadyURL     string            `hcl:"ready_url,optional" doc:"http:// or https:// URL that must answer a GET with a 2xx or 3xx status (redirects are not followed) before the task succeeds. At most one of ready_url and ready_tcp."`
	Insecure     bool              `hcl:"insecure,optional" doc:"Skip TLS certificate verification of ready_url; default false."`
	ReadyTCP     string            `hcl:"ready_tcp,optional" doc:"host:port that must accept a TCP connection before the task succeeds. At most one of ready_url and ready_tcp."`
	ReadyTimeout tasks.Duration    `hcl:"ready_timeout,optional" doc:"How long to wait for readiness before failing; default \"1m\"."`
	Recreate     bool              `hcl:"recreate,optional" doc:"When pid_file names a running process with a different command line, stop it (SIGTERM, SIGKILL after 30 s) and start this one instead of failing; default false."`
}

// Register adds the process and process_stop task types to r.
func Register(r *tasks.Registry) error { return r.Add(processType, stopType) }

// processType is the process task type.
func processType() tasks.Type {
	return tasks.Type{
		Name:    "process",
		Summary: "Start a long-running local process that outlives the run",
		Doc: `Starts command detached from flow: in a session of its own, with stdin from /dev/null
and stdout and stderr appended to log_file, so it keeps running after flow exits or is
killed. pid_file records the process; process_stop stops it.

With ready_url or ready_tcp the task then waits, printing progress every 10 s, until the
process is ready. If the process exits first, the task fails with the last 20 lines it
logged; after ready_timeout it fails and leaves the process running.

A re-run is idempotent: when pid_file names the running process with the same command
line, it prints "already present" and only waits for readiness. A pid file whose process
is gone is replaced. One naming a running process with a different command line is an
error unless recreate is true. Only the command line is compared: a change of env or dir
alone does not replace a running process.`,
		New: func() tasks.Task { return &Process{} },
		Outputs: []tasks.Output{
			{Name: "pid", Type: cty.Number, Doc: "Pid of the process."},
			{Name: "log_file", Type: cty.String, Doc: "Absolute path of the log file."},
		},
		Refresh: "the process pid_file names still runs the command",
		Undo:    "flow destroy stops the process pid_file names, as process_stop does (its process group gets SIGTERM, then SIGKILL after 30s), and removes the pid file; the log file stays.",
		Example: `task "process" "apiserver" {
  command       = ["bin/karmada-apiserver", "--secure-port=5443", "--etcd-servers=http://127.0.0.1:2379"]
  env           = { GOMAXPROCS = "2" }
  dir           = "lab"
  pid_file      = "run/karmada-apiserver.pid"
  log_file      = "logs/karmada-apiserver.log"
  ready_url     = "https://127.0.0.1:5443/readyz"
  insecure      = true
  ready_timeout = "2m"
}`,
	}
}

// Validate checks the command, env names, file paths, the readiness check and the
// timeout, all offline.
func (p *Process) Validate() error {
	switch {
	case p.Command == nil:
		return &tasks.AttrError{Attr: "command", Err: errors.New("is required")}
	case strings.ContainsRune(strings.Join(p.Command, ""), 0):
		return &tasks.AttrError{Attr: "command", Err: errors.New("must not contain NUL")}
	}
	if err := command.Validate(p.Command, "", p.Env); err != nil {
		return err
	}
	switch {
	case p.PIDFile == "":
		return &tasks.AttrError{Attr: "pid_file", Err: errors.New("must not be empty")}
	case p.LogFile == "":
		return &tasks.AttrError{Attr: "log_file", Err: errors.New("must not be empty")}
	case filepath.Clean(p.LogFile) == filepath.Clean(p.PIDFile):
		return &tasks.AttrError{Attr: "log_file", Err: errors.New("must differ from pid_file")}
	}
	if err := p.validateReady(); err != nil {
		return err
	}
	_, err := p.readyTimeout()
	return err
}

func (p *Process) validateReady() error {
	switch {
	case p.ReadyURL != "" && p.ReadyTCP != "":
		return &tasks.AttrError{Attr: "ready_tcp", Err: errors.New("ready_url and ready_tcp are mutually exclusive; set only one")}
	case p.Insecure && p.ReadyURL == "":
		return &tasks.AttrError{Attr: "insecure", Err: errors.New("has no effect without ready_url")}
	case p.ReadyTimeout != "" && p.ReadyURL == "" && p.ReadyTCP == "":
		return &tasks.AttrError{Attr: "ready_timeout", Err: errors.New("has no effect without ready_url or ready_tcp")}
	case p.ReadyURL != "":
		return validateURL(p.ReadyURL)
	case p.ReadyTCP != "":
		return validateHostPort(p.ReadyTCP)
	}
	return nil
}

func validateURL(raw string) error {
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return &tasks.AttrError{Attr: "ready_url", Err: errors.Unwrap(err)} // url.Error's text repeats the URL
	case u.Scheme != "http" && u.Scheme != "https":
		return &tasks.AttrError{Attr: "ready_url", Err: fmt.Errorf("scheme must be http or https, not %q", u.Scheme)}
	case u.Host == "":
		return &tasks.AttrError{Attr: "ready_url", Err: errors.New("host must not be empty")}
	}
	return nil
}

// validateHostPort wants a numeric port; looking up names would not be offline.
func validateHostPort(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		var ae *net.AddrError
		if errors.As(err, &ae) { // its text repeats the address
			err = errors.New(ae.Err)
		}
		return &tasks.AttrError{Attr: "ready_tcp", Err: fmt.Errorf("want host:port: %w", err)}
	}
	if host == "" {
		return &tasks.AttrError{Attr: "ready_tcp", Err: errors.New("host must not be empty")}
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return &tasks.AttrError{Attr: "ready_tcp", Err: fmt.Errorf("port %q must be a number from 1 to 65535", port)}
	}
	return nil
}

func (p *Process) readyTimeout() (time.Duration, error) {
	return p.ReadyTimeout.Positive("ready_timeout", time.Minute)
}

// program names the command in messages: `start "sleep"`.
// in returns p with its relative paths taken from env's directory (tasks.Env.Dir).
func (p *Process) in(env *tasks.Env) *Process {
	cp := *p
	cp.Dir, cp.PIDFile, cp.LogFile = env.WorkDir(p.Dir), env.InDir(p.PIDFile), env.InDir(p.LogFile)
	return &cp
}

func (p *Process) program() string { return filepath.Base(p.Command[0]) }

var _ tasks.Task = (*Process)(nil)
