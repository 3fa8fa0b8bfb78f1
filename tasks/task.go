// Package tasks owns the contract between the engine and every task type: the Task
// interface, the optional Destroyer interface that undoes a task for flow destroy, the
// Env a task runs in, the Registry that maps a type name to its constructor and
// documentation (including how it is undone), the attribute schema of a config struct
// (Attributes, Decode, Duration) and the sensitive mark.
//
// It also owns the one classifier of transient faults and the bounded backoff every
// task family uses to retry them (RetryTransient).
//
// It does not own evaluating HCL (the engine's config package does that), scheduling,
// the retry blocks that re-run whole instances, timeouts or checkpoints (the engine does
// those), nor what task families share to do their work: running a program
// (tasks/internal/command), capturing output (tasks/internal/output) and wording progress
// (tasks/internal/progress). Task types live in subpackages, one per family.
package tasks

import (
	"context"
	"io"
	"path/filepath"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/zclconf/go-cty/cty"
)

// Task is one configured task instance. A task type IS its hcl-tagged config struct:
// the engine decodes the block body into the value its constructor returns, then calls
// Validate, then Run.
//
// Validate must be fast and offline: it checks the decoded attributes for consistency
// (mutually exclusive attributes, positive durations) and touches no network or disk.
// It may return an *AttrError to point the diagnostic at one attribute.
//
// Run performs the side effect and returns the outputs. It must return promptly once ctx
// is cancelled, and it must be idempotent: after a kill between the side effect and its
// checkpoint, the engine runs it again.
type Task interface {
	Validate() error
	Run(ctx context.Context, env *Env) (Outputs, error)
}

// Outputs are the values a task publishes to its dependents, by attribute name. Their
// types must match the Output declarations of the task's Type.
type Outputs map[string]cty.Value

// Env is what the engine hands a running task. Stdout and Stderr are streamed to the
// user with the instance's address as prefix, kept for `flow logs`, and have secrets
// redacted; they are safe for concurrent use by one task. Logger carries the address.
type Env struct {
	// Address is the instance address, e.g. exec.build["member1"].
	Address string
	// Attempt counts from 1; it is above 1 when the task's retry block re-runs it.
	Attempt int
	Stdout  io.Writer
	Stderr  io.Writer
	Logger  hclog.Logger
	// TransientRetry bounds how long a task retries transient faults on its own
	// (see RetryTransient): 0 means DefaultTransientRetry, a negative value none.
	TransientRetry time.Duration
	// Dir is the absolute directory the instance acts in: the relative paths it names
	// are relative to it (see InDir and WorkDir), never the process's working
	// directory, which the engine does not change. The engine always sets it; empty
	// means the process's working directory. An undo gets the directory its instance
	// succeeded in, wherever flow runs now.
	Dir string
	// Lineage is the lineage id of the state the instance is recorded in (the same
	// in a migrated copy); empty for a state that kept none. A task that names what
	// it creates from the instance includes it, so two states never share an object.
	Lineage string
	// Started, when set, is told the process group of each command the task starts,
	// with the process's start time (clock ticks since boot), so the state can name a
	// survivor of a crash; Started(0, 0) says the command ended.
	Started func(group int, start uint64)
}

// InDir returns path resolved against env's directory: as it is when absolute, empty
// (an attribute not set) or when env has none. Every task resolves the relative
// paths it names with it.
func (env *Env) InDir(path string) string {
	if env == nil || env.Dir == "" || path == "" || filepath.IsAbs(path) {
		return path
	}
	return filepath.Join(env.Dir, path)
}

// InDirAll returns paths, each resolved as InDir does.
func (env *Env) InDirAll(paths []string) []string {
	out := make([]string, len(paths))
	for i, p := range paths {
		out[i] = env.InDir(p)
	}
	return out
}

// WorkDir returns dir, a task's working directory attribute, resolved as InDir does;
// unset, env's directory. A command a task starts runs there.
func (env *Env) WorkDir(dir string) string {
	if dir == "" {
		dir = "."
	}
	return env.InDir(dir)
}

// AttrError is a Validate error about one attribute; the engine reports it on that
// attribute's source range instead of the whole block.
type AttrError struct {
	Attr string
	Err  error
}

func (e *AttrError) Error() string { return e.Attr + ": " + e.Err.Error() }
func (e *AttrError) Unwrap() error { return e.Err }
