package preflight

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"strings"

	"github.com/zclconf/go-cty/cty"

	"github.com/flowdev/flow/tasks"
	"github.com/flowdev/flow/tasks/internal/output"
)

// Preflight checks what a lab needs before it creates anything. It is the hcl
// config struct of the preflight task type.
type Preflight struct {
	LXD           *bool                        `hcl:"lxd,optional" doc:"Check the LXD daemon: access to its unix socket (root or the socket's group), that it answers, storage_pool and the default profile's root disk; default true."`
	StoragePool   string                       `hcl:"storage_pool,optional" doc:"LXD storage pool the lab's instances use; default \"default\"."`
	Privileged    bool                         `hcl:"privileged,optional" doc:"The lab runs privileged or nested containers (security.privileged, security.nesting): check that flow does not itself run in a user namespace, where LXD cannot start them."`
	Ports         []int                        `hcl:"ports,optional" doc:"Host TCP ports the lab binds on 127.0.0.1. Each must be free or already this lab's: held by an LXD proxy device of one of instances, or by a process a pid file of pid_files records (or its process group)."`
	Instances     []string                     `hcl:"instances,optional" doc:"This lab's LXD instances: a port their proxy devices listen on counts as the lab's own."`
	PIDFiles      []string                     `hcl:"pid_files,optional" doc:"pid_file of this flow's process tasks: a port their processes hold counts as the lab's own."`
	DiskPath      string                       `hcl:"disk_path,optional" doc:"Directory whose file system must have min_free_disk_mb free; default \"/\"."`
	MinFreeDiskMB int                          `hcl:"min_free_disk_mb,optional" doc:"Free space disk_path's file system needs, in MiB; 0 does not check."`
	MinMemoryMB   int                          `hcl:"min_memory_mb,optional" doc:"Memory the host needs available (MemAvailable), in MiB; 0 does not check."`
	Remotes       map[string]map[string]string `hcl:"remotes,optional" doc:"LXD hosts the flow uses, by name: each the remote map of the lxd tasks (address, client_cert, client_key, server_cert, ...). Each must answer; one that does not is one problem naming the host and its address."`
	CNIConfigDirs []string                     `hcl:"cni_config_dirs,optional" doc:"Directories of CNI configurations (*.conf, *.conflist) to check for IPv6 ranges, which break Karmada's etcd."`
}

func preflightType() tasks.Type {
	return tasks.Type{
		Name:    "preflight",
		Summary: "Check, before a lab creates anything, that the host has what it needs",
		Undo:    "Nothing to undo: it only reads the host and the LXD daemon.",
		Doc: `Runs every check it is given and reports each problem in one message of its own, on
stderr, then fails naming them all; a lab flow runs it first, so a problem surfaces
before anything is created instead of as an odd error minutes later. It changes
nothing: a port held by a process that is not the lab's is reported with its pid and
command, never stopped.

Checks: LXD (the socket is accessible: root or its group; the daemon answers; the
storage pool and the default profile's root disk exist), each of remotes (its HTTPS
address answers, with its certificates, and trusts the client: one line naming the
host and its address when it does not, instead of a timeout per task), privileged and nested
containers (flow is not in a user namespace), each port in ports (free, or held by an
LXD proxy device of one of instances or by a process one of pid_files records, which
the re-run of a lab finds), free disk and memory, and CNI configurations without IPv6
ranges (Karmada's etcd fails on them).`,
		New: func() tasks.Task { return &Preflight{} },
		Outputs: []tasks.Output{
			{Name: "checked", Type: cty.List(cty.String), Doc: "One line per check that passed.", Clean: true},
		},
		Example: `task "preflight" "lab" {
  storage_pool     = "default"
  privileged       = true
  ports            = [16441, 16442, 16444, 32000]
  instances        = ["member1", "member2", "member3", "lab-registry"]
  min_free_disk_mb = 2048
  min_memory_mb    = 1024
}`,
	}
}

// Register adds the preflight type to r.
func Register(r *tasks.Registry) error { return r.Add(preflightType) }

// Validate checks ports and minimums offline.
func (p *Preflight) Validate() error {
	for _, port := range p.Ports {
		if port < 1 || port > 65535 {
			return &tasks.AttrError{Attr: "ports", Err: fmt.Errorf("%d is not a TCP port", port)}
		}
	}
	if p.MinFreeDiskMB < 0 {
		return &tasks.AttrError{Attr: "min_free_disk_mb", Err: errors.New("must not be negative")}
	}
	if p.MinMemoryMB < 0 {
		return &tasks.AttrError{Attr: "min_memory_mb", Err: errors.New("must not be negative")}
	}
	for _, f := range p.PIDFiles {
		if f == "" {
			return &tasks.AttrError{Attr: "pid_files", Err: errors.New("must not hold an empty path")}
		}
	}
	return nil
}

// report collects the outcome of every check.
type report struct {
	checked  []string
	problems []string
}

func (r *report) ok(format string, args ...any) {
	r.checked = append(r.checked, fmt.Sprintf(format, args...))
}

func (r *report) problem(format string, args ...any) {
	r.problems = append(r.problems, fmt.Sprintf(format, args...))
}

// Run runs every check, prints each problem on its own line and fails naming them all.
func (p *Preflight) Run(ctx context.Context, env *tasks.Env) (tasks.Outputs, error) {
	p = p.in(env)
	if err := p.Validate(); err != nil {
		return nil, err
	}
	r := &report{}
	var ours *ownership
	if p.LXD == nil || *p.LXD {
		ours = p.checkLXD(ctx, r)
	}
	p.checkRemotes(ctx, r)
	if p.Privileged {
		checkUserNamespace(r)
	}
	p.checkPorts(ctx, r, ours)
	p.checkResources(r)
	p.checkCNI(r)
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("preflight: %w", err)
	}
	for _, c := range r.checked {
		fmt.Fprintln(env.Stdout, "ok:", c)
	}
	if len(r.problems) > 0 {
		stderr := env.Stderr
		if stderr == nil {
			stderr = io.Discard
		}
		for _, msg := range r.problems {
			fmt.Fprintln(stderr, "problem:", msg)
		}
		return nil, fmt.Errorf("preflight: %d problem(s): %s", len(r.problems), strings.Join(r.problems, "; "))
	}
	return tasks.Outputs{"checked": output.StringList(r.checked)}, nil
}

var _ tasks.Task = (*Preflight)(nil)

// in returns p with its local paths (pid_files, disk_path, cni_config_dirs) taken
// from env's directory (tasks.Env.Dir).
func (p *Preflight) in(env *tasks.Env) *Preflight {
	cp := *p
	cp.PIDFiles, cp.DiskPath, cp.CNIConfigDirs = env.InDirAll(p.PIDFiles), env.InDir(p.DiskPath), env.InDirAll(p.CNIConfigDirs)
	cp.Remotes = make(map[string]map[string]string, len(p.Remotes))
	for name, remote := range p.Remotes {
		cp.Remotes[name] = maps.Clone(remote)
		for _, k := range []string{"client_cert", "client_key", "server_cert"} {
			if v, ok := remote[k]; ok {
				cp.Remotes[name][k] = env.InDir(v)
			}
		}
	}
	return &cp
}
