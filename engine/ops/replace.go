package ops

import (
	"context"
	"time"

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

// undoRecorded undoes what an earlier run of inst made, as its record prev holds it
// (see object.go; a record of an older flow: with its inputs as evaluated now), in the
// directory it was made in, before the attempt runs it again.
func undoRecorded(ctx context.Context, w *walk.Walk, inst *plan.Instance, ev *plan.Evaluated, env *tasks.Env, prev *state.Instance) error {
	task := ev.Task
	if prev.Inputs != nil {
		t, err := recordedTask(inst.Task.Kind, prev, ev.Inputs)
		if err != nil {
			return err
		}
		task = t
	}
	destroyer, ok := task.(tasks.Destroyer)
	if !ok {
		return nil
	}
	undoEnv := *env
	undoEnv.Dir = objectDir(w, inst.Addr, prev)
	env = &undoEnv
	var recorded tasks.Outputs
	if prev.Status == state.Succeeded && len(prev.Outputs) > 0 {
		recorded = decodeOutputs(prev)
	}
	w.Say("%s: undoing it first", inst.Addr)
	began := time.Now()
	if err := destroyer.Destroy(ctx, env, recorded); err != nil {
		return err
	}
	w.Say("%s: undone in %s", inst.Addr, walk.Round(time.Since(began)))
	return nil
}
