package engine

import (
	"github.com/flowdev/flow/engine/ops"
	"github.com/flowdev/flow/engine/state"
	"github.com/flowdev/flow/engine/walk"
)

// The walker is engine/walk: the session hands it a plan and a shape, and the
// operations of engine/ops (runOp, undoOp) do what a walk does with each instance.
// Its names are the engine's too, so that a caller of the engine imports one package.
type (
	// Runner walks a plan once (see walk.Runner).
	Runner = walk.Runner
	// Options configure one walk.
	Options = walk.Options
	// Result is what a walk ends with.
	Result = walk.Result
	// Checkpointer makes a batch of records durable; *state.Store is the real one.
	Checkpointer = walk.Checkpointer
)

// NewRunner prepares a run of p (see ops.NewRunner). It writes nothing until Run.
func NewRunner(p *Plan, opts Options) *Runner { return ops.NewRunner(p, opts) }

// NewDestroyer prepares the destroy of the run of p whose records are created (see
// ops.NewDestroyer). It writes nothing until Run.
func NewDestroyer(p *Plan, created map[string]*state.Instance, opts Options) *Runner {
	return ops.NewDestroyer(p, created, opts)
}

// KillTasks sends SIGKILL to the process group of every command the tasks of this
// process still run (see walk.KillTasks), and returns the groups it could not signal.
func KillTasks() (left []int) { return walk.KillTasks() }
