package ops

import (
	"context"
	"fmt"

	"github.com/flowdev/flow/engine/plan"
	"github.com/flowdev/flow/engine/state"
	"github.com/flowdev/flow/engine/walk"
	"github.com/flowdev/flow/tasks"
)

// --replace, as Terraform's -replace: an instance it selects that ran before and
// that a destroy would undo is undone first, then created again. One whose type
// cannot be undone (or that is retained) just runs again.

// undoesOnReplace reports whether a replace of inst undoes it before running it.
func undoesOnReplace(inst *plan.Instance, prev *state.Instance) bool {
	return Ran(prev) && keepReason(inst) == ""
}

// replaced is the record of what a replace of addr undoes: what earlier runs made and
// no run undid (the live record), never the record the run builds on as such, which
// may hold nothing (an instance a failed orphan walk only looked at).
// A walk given no live set (Made nil) takes the record it builds on for it.
func replaced(opts *walk.Options, addr string) *state.Instance {
	if opts.Made == nil {
		return opts.Previous[addr]
	}
	return opts.Made[addr]
}

// replaceReason says what a run does with inst when --replace selects it.
func replaceReason(inst *plan.Instance, prev *state.Instance) string {
	if undoesOnReplace(inst, prev) {
		return "replaced (--replace): undone, then run again"
	}
	return "replaced (--replace)"
}

// undoRecorded undoes what an earlier run of inst made when an older flow recorded it
// without its object (prev holds no inputs): from the flow as evaluated now (ev), in
// the directory it was made in, before the attempt runs it again. Only when ev is what
// that run succeeded with (the same fingerprint): other values would point the undo at
// what the run did not make, so it is refused.
func undoRecorded(ctx context.Context, w *walk.Walk, inst *plan.Instance, ev *plan.Evaluated, env *tasks.Env, prev *state.Instance) error {
	if fp, _ := plan.Fingerprint(inst.Task, ev.Inputs); prev.Fingerprint == "" || fp != prev.Fingerprint {
		return fmt.Errorf("what it made before was recorded by an older flow without its object, and the flow now says otherwise: " +
			"replace it with the values it ran with, or undo it by hand and run without --replace")
	}
	return destroyRecorded(ctx, w, inst.Addr, ev.Task, env, prev,
		"undoing it first (recorded by an older flow: as the flow says now, which is what it ran with)")
}
