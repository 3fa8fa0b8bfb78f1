package ops

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/zclconf/go-cty/cty"

	"github.com/flowdev/flow/engine/plan"
	"github.com/flowdev/flow/engine/state"
	"github.com/flowdev/flow/engine/walk"
	"github.com/flowdev/flow/tasks"
)

// An object stays recorded until its undo succeeds. An attempt that is to undo what
// an earlier run made before it makes the new object (--replace, or an identifying
// attribute changed) first records that old object among its record's Deposed objects,
// durably, with the new object's inputs beside them; it then undoes the deposed
// objects, newest first, dropping each from the record once its undo succeeded. An
// undo that fails, or a kill, leaves the rest deposed: the next run of the instance
// undoes them first, a destroy after the instance's own object, and a record written
// anew (run --new) carries them over (see carried).
//
// Every undo goes in reverse dependency order: before an attempt undoes old objects,
// the objects of what was built on the instance in the run that made them (its
// dependents, transitively) are deposed and undone first, latest in plan order first,
// and those dependents run again when their turn comes (cascade).

// rerun reports whether a cascade undid addr's object in this walk: it runs again,
// whatever its record says.
func (op *runOp) rerun(addr string) bool {
	op.mu.Lock()
	defer op.mu.Unlock()
	return op.reruns[addr]
}

func (op *runOp) markRerun(addr string) {
	op.mu.Lock()
	defer op.mu.Unlock()
	if op.reruns == nil {
		op.reruns = map[string]bool{}
	}
	op.reruns[addr] = true
}

// carried is what addr's record holds still to be undone, as the walk starts its first
// attempt: the deposed objects of the live record (what earlier runs made and no run
// undid, the run resumed included), unless this walk's record took them over already
// (a cascade: cur.Holds).
func carried(opts *walk.Options, addr string, cur *state.Instance) []*state.Instance {
	objs := cur.Deposed
	if made := opts.Made[addr]; made != nil && !cur.Holds {
		objs = made.Deposed
	}
	var out []*state.Instance
	for _, obj := range objs {
		out = append(out, movedHere(opts, obj))
	}
	return out
}

// deposedObject is rec's object alone, without what it holds deposed, as a deposed
// object records it (in the walk's directory after a move, see movedHere).
func deposedObject(opts *walk.Options, rec *state.Instance) *state.Instance {
	obj := &state.Instance{Address: rec.Address, Type: rec.Type, Status: rec.Status,
		Attempts: rec.Attempts, StartedAt: rec.StartedAt, FinishedAt: rec.FinishedAt,
		Outputs: rec.Outputs, Fingerprint: rec.Fingerprint, Redacted: rec.Redacted,
		Inputs: rec.Inputs, Withheld: rec.Withheld, Dir: rec.Dir, Retain: rec.Retain}
	return movedHere(opts, obj)
}

// movedHere is obj as a walk records it: in a walk that took the project over
// (--move), made in the walk's directory, where the project and its files are now; a
// copy when it changed.
func movedHere(opts *walk.Options, obj *state.Instance) *state.Instance {
	if !opts.Moved || obj.Dir == "" || obj.Dir == opts.Dir {
		return obj
	}
	cp := *obj
	cp.Dir = opts.Dir
	return &cp
}

// cascade deposes and undoes, before inst undoes its own old objects, the live objects
// of inst's dependents (transitively) that can be undone, latest in plan order first,
// and marks each to run again (op.rerun). Each dependent's record holds its objects as
// deposed, durably, until their undo succeeds; a failure ends the cascade with its
// error and leaves the rest recorded.
func (op *runOp) cascade(ctx context.Context, w *walk.Walk, inst *plan.Instance, env *tasks.Env) error {
	p := w.Plan()
	opts := w.Options()
	below := map[string]bool{}
	var visit func(string)
	visit = func(a string) {
		for _, d := range p.Dependents(a) {
			if !below[d] {
				below[d] = true
				visit(d)
			}
		}
	}
	visit(inst.Addr)
	for i := len(p.Order) - 1; i >= 0; i-- {
		addr := p.Order[i]
		if !below[addr] || op.rerun(addr) {
			continue
		}
		dep := p.Instances[addr]
		made := opts.Made[addr]
		objs := carried(opts, addr, w.Record(addr))
		if made != nil && Ran(made) && made.HasObject() && keepReason(dep) == "" {
			objs = append(objs, deposedObject(opts, made))
		}
		op.markRerun(addr)
		if len(objs) == 0 {
			continue
		}
		w.Say("%s: built on what %s made; undoing it first", addr, inst.Addr)
		rec := w.Update(addr, func(rec *state.Instance) {
			rec.Deposed, rec.Holds, rec.Inputs, rec.Withheld, rec.Dir = objs, true, nil, nil, ""
			rec.Status, rec.Reason = state.Pending, "undone before "+inst.Addr+" undid what it made; runs again"
		})
		if err := w.Durable(rec); err != nil {
			return fmt.Errorf("record %s before undoing it: %w", addr, err)
		}
		depEnv := *env
		depEnv.Address = addr
		if err := undoDeposed(ctx, w, dep, &depEnv, nil); err != nil {
			return fmt.Errorf("undo %s, built on it: %w", addr, err)
		}
	}
	return nil
}

// undoDeposed undoes the deposed objects inst's record holds, newest first, each
// decoded from its own record in the directory it was made in, and drops each from the
// record once undone. The first failure stops it, leaving that object and the older
// ones recorded.
func undoDeposed(ctx context.Context, w *walk.Walk, inst *plan.Instance, env *tasks.Env, now map[string]cty.Value) error {
	for {
		objs := w.Record(inst.Addr).Deposed
		if len(objs) == 0 {
			return nil
		}
		obj := objs[len(objs)-1]
		if err := undoObject(ctx, w, inst, env, obj, now); err != nil {
			return err
		}
		rec := w.Update(inst.Addr, func(rec *state.Instance) {
			rec.Deposed = slices.Clone(rec.Deposed[:len(rec.Deposed)-1])
			if len(rec.Deposed) == 0 {
				rec.Deposed = nil
			}
		})
		w.Submit(rec, nil)
	}
}

// undoObject calls the Destroy of inst's type on the object obj records, in the
// directory it was made in; now supplies a withheld secret. An object recorded without
// its inputs (an older flow) cannot be undone this way: it says so.
func undoObject(ctx context.Context, w *walk.Walk, inst *plan.Instance, env *tasks.Env, obj *state.Instance, now map[string]cty.Value) error {
	if !obj.HasObject() {
		return fmt.Errorf("the object it made before was recorded by an older flow without its inputs; undo it by hand")
	}
	task, err := recordedTask(inst.Task.Kind, obj, now)
	if err != nil {
		return err
	}
	return destroyRecorded(ctx, w, inst.Addr, task, env, obj,
		"undoing what it made before: "+strings.TrimSpace(objectText(inst.Task.Kind, obj)))
}

// destroyRecorded calls task's Destroy, when its type has one, on the object rec
// records: in the directory it was made in, given the outputs its success recorded,
// once the walk's lock is confirmed (last before acting). It says what (a line of addr)
// before, and how long it took after.
func destroyRecorded(ctx context.Context, w *walk.Walk, addr string, task tasks.Task, env *tasks.Env, rec *state.Instance, what string) error {
	destroyer, ok := task.(tasks.Destroyer)
	if !ok {
		return nil
	}
	undoEnv := *env
	undoEnv.Dir = objectDir(w, addr, rec)
	var recorded tasks.Outputs
	if rec.Status == state.Succeeded && len(rec.Outputs) > 0 {
		recorded = decodeOutputs(rec)
	}
	w.Say("%s: %s", addr, what)
	began := time.Now()
	if err := w.Confirmed(); err != nil {
		return err
	}
	if err := destroyer.Destroy(ctx, &undoEnv, recorded); err != nil {
		return err
	}
	w.Say("%s: undone in %s", addr, walk.Round(time.Since(began)))
	return nil
}
