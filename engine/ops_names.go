package engine

import (
	"github.com/flowdev/flow/engine/ops"
	"github.com/flowdev/flow/engine/state"
)

// The operations are engine/ops: what a walk does with each instance, what a run or a
// destroy would do, and the run records. Their names for a preview are the engine's
// too, so that a caller of the engine imports one package.
type (
	// Action is what a run or a destroy would do with one instance.
	Action = ops.Action
	// Decision is the previewed action for one instance and why.
	Decision = ops.Decision
	// DestroyPreview is what a destroy would do (flow plan --destroy, flow destroy).
	DestroyPreview = ops.DestroyPreview
)

// What a run or a destroy does with an instance.
const (
	ActionRun       = ops.ActionRun
	ActionSkip      = ops.ActionSkip
	ActionMaybe     = ops.ActionMaybe
	ActionDestroy   = ops.ActionDestroy
	ActionKeep      = ops.ActionKeep
	ActionDestroyed = ops.ActionDestroyed
)

// Decisions says, in plan order, what a run of p resuming from previous would do with
// each instance (see ops.Decisions).
func Decisions(p *Plan, previous map[string]*state.Instance, replace []string) []Decision {
	return ops.Decisions(p, previous, replace)
}
