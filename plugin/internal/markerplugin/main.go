// Command markerplugin is the plugin flow's end-to-end tests run: the marker task type
// writes a file, its Check finds it already present (or different), its Destroy
// removes it, and attributes make one instance crash the plugin, hang it, or run a
// program it started (spawn) that outlives the plugin unless flow ends it.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/zclconf/go-cty/cty"

	"github.com/flowdev/flow/plugin"
	"github.com/flowdev/flow/plugin/server"
	"github.com/flowdev/flow/tasks"
)

// Marker is the config struct of the marker type.
type Marker struct {
	Path    string         `hcl:"path" doc:"File to write, relative to the directory flow runs in."`
	Content string         `hcl:"content" doc:"What the file holds."`
	Token   string         `hcl:"token,optional" sensitive:"true" doc:"A secret the task prints (to test redaction)."`
	Delay   tasks.Duration `hcl:"delay,optional" doc:"Sleep before writing, honouring cancellation."`
	After   tasks.Duration `hcl:"after,optional" doc:"Sleep after writing, honouring cancellation: a kill then leaves the file unrecorded."`
	Log     string         `hcl:"log,optional" doc:"File to which every write appends a line."`
	Crash   bool           `hcl:"crash,optional" doc:"After delay, print to stderr and exit the plugin process."`
	Hang    bool           `hcl:"hang,optional" doc:"Never return, ignoring cancellation."`
	Spawn   string         `hcl:"spawn,optional" doc:"Start sleep 3600, write its pid to this file and wait for it, ignoring cancellation."`
}

func markerType() tasks.Type {
	return tasks.Type{
		Name: "marker", Summary: "Write a marker file (a test plugin)",
		Doc: "Writes content to path; an existing file with that content is already present.",
		New: func() tasks.Task { return &Marker{} },
		Outputs: []tasks.Output{
			{Name: "path", Type: cty.String, Doc: "The file written."},
			{Name: "bytes", Type: cty.Number, Doc: "Its length."},
		},
		Example: `task "marker" "m" {
  path    = "m.txt"
  content = "hello"
}`,
	}
}

// Validate rejects an empty path and content with a dot-dot.
func (m *Marker) Validate() error {
	if m.Path == "" {
		return &tasks.AttrError{Attr: "path", Err: errors.New("must not be empty")}
	}
	if filepath.Clean(m.Path) != m.Path {
		return &tasks.AttrError{Attr: "path", Err: fmt.Errorf("%q is not clean, write %q", m.Path, filepath.Clean(m.Path))}
	}
	return nil
}

func (m *Marker) outputs() tasks.Outputs {
	return tasks.Outputs{"path": cty.StringVal(m.Path), "bytes": cty.NumberIntVal(int64(len(m.Content)))}
}

// Check finds the file.
func (m *Marker) Check(_ context.Context, _ *tasks.Env) (plugin.CheckResult, error) {
	b, err := os.ReadFile(m.Path)
	switch {
	case os.IsNotExist(err):
		return plugin.CheckResult{State: plugin.Absent}, nil
	case err != nil:
		return plugin.CheckResult{}, err
	case string(b) != m.Content:
		return plugin.CheckResult{State: plugin.Differs, Detail: fmt.Sprintf("%s holds %q, not %q", m.Path, b, m.Content)}, nil
	}
	return plugin.CheckResult{State: plugin.Present, Detail: m.Path, Outputs: m.outputs()}, nil
}

// Run writes the file.
func (m *Marker) Run(ctx context.Context, env *tasks.Env) (tasks.Outputs, error) {
	if m.Token != "" {
		fmt.Fprintf(env.Stdout, "using token %s\n", m.Token)
	}
	if err := sleep(ctx, m.Delay); err != nil {
		return nil, fmt.Errorf("marker %s: %w", m.Path, err)
	}
	switch {
	case m.Crash:
		fmt.Fprintf(server.Stderr, "marker: cannot go on with %s\n", m.Path)
		fmt.Fprintln(server.Stderr, "marker: exiting")
		os.Exit(3)
	case m.Hang:
		fmt.Fprintf(env.Stdout, "hanging on %s\n", m.Path)
		select {}
	case m.Spawn != "":
		// As a careless plugin would: exec.Command, not CommandContext, and no group.
		cmd := exec.Command("sleep", "3600")
		if err := cmd.Start(); err != nil {
			return nil, err
		}
		if err := os.WriteFile(m.Spawn, []byte(strconv.Itoa(cmd.Process.Pid)), 0o644); err != nil {
			return nil, err
		}
		fmt.Fprintf(env.Stdout, "started sleep, pid %d\n", cmd.Process.Pid)
		if err := cmd.Wait(); err != nil {
			return nil, fmt.Errorf("sleep: %w", err)
		}
	}
	if err := os.WriteFile(m.Path, []byte(m.Content), 0o644); err != nil {
		return nil, err
	}
	if m.Log != "" {
		f, err := os.OpenFile(m.Log, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			return nil, err
		}
		fmt.Fprintln(f, m.Path)
		f.Close()
	}
	fmt.Fprintf(env.Stdout, "wrote %s\n", m.Path)
	if err := sleep(ctx, m.After); err != nil {
		return nil, fmt.Errorf("marker %s: %w", m.Path, err)
	}
	return m.outputs(), nil
}

func sleep(ctx context.Context, d tasks.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d.Or(0)):
		return nil
	}
}

// Destroy removes the file.
func (m *Marker) Destroy(_ context.Context, env *tasks.Env, _ tasks.Outputs) error {
	err := os.Remove(m.Path)
	if os.IsNotExist(err) {
		fmt.Fprintf(env.Stdout, "%s already gone\n", m.Path)
		return nil
	}
	if err == nil {
		fmt.Fprintf(env.Stdout, "removed %s\n", m.Path)
	}
	return err
}

var (
	_ plugin.Checker  = (*Marker)(nil)
	_ tasks.Destroyer = (*Marker)(nil)
)

func main() {
	server.Serve(func(r *tasks.Registry) error { return r.Add(markerType) })
}
