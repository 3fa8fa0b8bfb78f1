package engine

import (
	"github.com/flowdev/flow/engine/state"
	"github.com/flowdev/flow/engine/walk"
)

// The walker is engine/walk: the session hands it a plan and a shape, and the
// operations in this package (runOp, undoOp) do what a walk does with each instance.
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

// NewRunner prepares a run of p: a walk of its graph, each instance run (runOp). It
// writes nothing until Run.
func NewRunner(p *Plan, opts Options) *Runner {
	return walk.New(p, runShape(p), opts)
}

// NewDestroyer prepares the destroy of the run of p whose records are created: a
// walk of p reversed, in which each instance that run started is undone once
// everything that depends on it has had its turn, latest in plan order first (see
// undo.go). It writes nothing until Run.
func NewDestroyer(p *Plan, created map[string]*state.Instance, opts Options) *Runner {
	return walk.New(p, destroyShape(p, created, nil), opts)
}

// KillTasks sends SIGKILL to the process group of every command the tasks of this
// process still run (see walk.KillTasks), and returns the groups it could not signal.
func KillTasks() (left []int) { return walk.KillTasks() }
