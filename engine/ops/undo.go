package ops

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/flowdev/flow/engine/plan"
	"github.com/flowdev/flow/engine/state"
	"github.com/flowdev/flow/engine/walk"
	"github.com/flowdev/flow/tasks"
)

// A destroy is a walk of the reverse graph by the same walker as a run (engine/walk):
// what this file holds is that graph (destroyShape) and the operation, what a destroy
// does with each instance (undoOp; NewDestroyer builds the walk). An instance is left alone when its type cannot be undone (or, with
// Type.UndoAttr, the instance does not set that attribute), is retained, or when
// something that depends on it could not be destroyed; otherwise it is decoded from
// its inputs as the undone run evaluated them (the plan's variables and its
// dependencies' recorded outputs) and its type's Destroy is called.

// NewDestroyer prepares the destroy of the run of p whose records are created: a
// walk of p reversed, in which each instance that run started is undone once
// everything that depends on it has had its turn, latest in plan order first. It
// writes nothing until Run.
func NewDestroyer(p *plan.Plan, created map[string]*state.Instance, opts walk.Options) *walk.Runner {
	return walk.New(p, destroyShape(p, created, nil), opts)
}

// destroyShape is the reversed walk of p that undoes what created records; orphans,
// when set, are p's instances decoded from their records alone (see orphanPlan).
func destroyShape(p *plan.Plan, created map[string]*state.Instance, orphans map[string]*Orphan) *walk.Shape {
	order := undone(p, created)
	waits, frees := reverseEdges(p, order)
	return &walk.Shape{Order: order, Waits: waits, Frees: frees, LatestFirst: true,
		Op: &undoOp{created: created, orphans: orphans, blocked: map[string]bool{}}}
}

// undoOp undoes each instance from its record. Its state is the walk's goroutine's,
// but for Perform's reads of created.
type undoOp struct {
	created map[string]*state.Instance // the undone run's records
	orphans map[string]*Orphan         // instances no longer in the flow, decoded from their records alone; nil in a destroy
	blocked map[string]bool            // the instances not destroyed: what they depend on stays
}

var _ walk.Operation = (*undoOp)(nil)

// Initial takes over an earlier attempt's record only where it undid the instance.
func (u *undoOp) Initial(inst *plan.Instance, prev *state.Instance) *state.Instance {
	rec := &state.Instance{Address: inst.Addr, Type: inst.Task.Type, Status: state.Pending}
	if prev != nil && prev.Status == state.Succeeded {
		cp := *prev
		rec = &cp
	}
	rec.Order = inst.Index
	if u.orphans != nil {
		rec.Removed, rec.Order = true, -1
	}
	return rec
}

func (u *undoOp) Values(p *plan.Plan) map[string]cty.Value {
	if u.orphans != nil {
		return map[string]cty.Value{}
	}
	return recordedValues(p, u.created)
}

// Context: an orphan is decoded from its record alone, with no expression to evaluate.
func (u *undoOp) Context(w *walk.Walk, inst *plan.Instance) (*hcl.EvalContext, hcl.Diagnostics) {
	if u.orphans[inst.Addr] != nil {
		return nil, nil
	}
	return valuesContext(w, inst)
}

func (u *undoOp) Perform(ctx context.Context, w *walk.Walk, inst *plan.Instance, _ int, ectx *hcl.EvalContext, diags hcl.Diagnostics) walk.Outcome {
	return undo(ctx, w, inst, ectx, diags, u.created[inst.Addr], u.orphans[inst.Addr] != nil)
}

// A destroy goes on to its end when interrupted: what is left is settled as
// interrupted or kept.
func (u *undoOp) StopsOnInterrupt() bool { return false }

// Judge: a destroy failed if an undo failed, and was interrupted if one was; leaving
// an instance as it is fails nothing. It has no outputs.
func (u *undoOp) Judge(_ *walk.Walk, res *walk.Result) {
	for _, rec := range res.Records {
		switch {
		case rec.Status == state.Failed:
			res.Status = state.Failed
		case rec.Status == state.Interrupted && res.Status == state.Succeeded:
			res.Status = state.Interrupted
		}
	}
}

// undone lists, in plan order, the instances the run whose records are created started,
// or whose records hold deposed objects.
func undone(p *plan.Plan, created map[string]*state.Instance) []string {
	var order []string
	for _, addr := range p.Order {
		if HoldsObjects(created[addr]) {
			order = append(order, addr)
		}
	}
	return order
}

// Ran reports whether an instance record shows that its task ran at some point of the
// run: an instance skipped or pending after a resume may have run in an earlier attempt.
func Ran(r *state.Instance) bool {
	return r != nil && (r.Attempts > 0 || r.Status == state.Succeeded)
}

// HoldsObjects reports whether r records something an undo must act on: the object its
// task made (it ran) or deposed objects still to be undone (deposed.go).
func HoldsObjects(r *state.Instance) bool {
	return r != nil && ((Ran(r) && !r.Holds) || len(r.Deposed) > 0)
}

// ownObject reports whether r's own object is still to be undone: it ran, and no
// cascade deposed its object (deposed.go).
func ownObject(r *state.Instance) bool { return Ran(r) && !r.Holds }

// reverseEdges returns, for each instance of order, how many instances of order depend
// on it (waits), and for each, the instances of order that it depends on (frees).
// Instances outside order (they never ran) are looked through, so an instance still
// waits for a dependent reached only through them.
func reverseEdges(p *plan.Plan, order []string) (waits map[string]int, frees map[string][]string) {
	walked := make(map[string]bool, len(order))
	for _, addr := range order {
		walked[addr] = true
	}
	waits, frees = make(map[string]int, len(order)), map[string][]string{}
	for _, addr := range order {
		waits[addr] += 0
		seen := map[string]bool{}
		var visit func(string)
		visit = func(a string) {
			for _, dep := range p.Dependents(a) {
				if seen[dep] {
					continue
				}
				seen[dep] = true
				if !walked[dep] {
					visit(dep)
					continue
				}
				waits[addr]++
				frees[dep] = append(frees[dep], addr)
			}
		}
		visit(addr)
	}
	return waits, frees
}

// recordedValues rebuilds, in plan order, what each instance's dependents read: its
// inputs as evaluated now from the recorded values, and its recorded outputs. An
// instance whose outputs were not stored reads as unknown, so whatever depends on it
// cannot be decoded and is reported so.
func recordedValues(p *plan.Plan, created map[string]*state.Instance) map[string]cty.Value {
	values := map[string]cty.Value{}
	for _, addr := range p.Order {
		inst := p.Instances[addr]
		rec := created[addr]
		if rec == nil || rec.Status != state.Succeeded || rec.Redacted {
			values[addr] = cty.UnknownVal(plan.ObjectType(inst.Task))
			continue
		}
		ectx, _ := p.EvalContext(inst, func(a string) cty.Value { return values[a] })
		ev, _ := p.Evaluate(inst, ectx, false)
		values[addr] = plan.InstanceValue(inst.Task, ev.Inputs, decodeOutputs(rec))
	}
	return values
}

// Settle decides, without a worker, what a destroy does with inst when it need not or
// cannot undo it; nil when inst is to be undone.
func (u *undoOp) Settle(w *walk.Walk, inst *plan.Instance) walk.Outcome {
	addr := inst.Addr
	now := time.Now()
	res := &attemptResult{inst: inst, attempt: 1, began: now, finished: now, kind: outcomeKept}
	switch {
	case w.Record(addr).Status == state.Succeeded:
		res.kind, res.reason = outcomeUpToDate, "already destroyed"
		return res
	case u.blocker(w.Plan(), addr) != "":
		res.reason, res.blocks = fmt.Sprintf("kept: %s, which depends on it, was not destroyed", u.blocker(w.Plan(), addr)), true
	case u.orphans[addr] != nil && orphanKeep(inst.Task.Kind, u.orphans[addr]) != "":
		res.reason = orphanKeep(inst.Task.Kind, u.orphans[addr])
	case u.orphans[addr] == nil && keepReason(inst) != "":
		res.reason = keepReason(inst)
	case w.Interrupted():
		res.kind, res.err = outcomeInterrupted, context.Canceled
	default:
		return nil
	}
	return res
}

// keepReason says why a destroy leaves inst as it is whatever else happens: it is
// retained, its type cannot be undone, or it does not set its type's undo attribute;
// "" when it is to be undone.
func keepReason(inst *plan.Instance) string {
	kind := inst.Task.Kind
	switch {
	case inst.Task.RetainOnDestroy:
		// As Terraform's removed block with destroy = false: its dependencies may go.
		return "retained (retain_on_destroy)"
	case !kind.Destroys():
		return fmt.Sprintf("left as it is (%s; see \"flow tasks %s\")", kind.UndoGist(), inst.Task.Type)
	case kind.UndoAttr != "" && !setsAttr(inst, kind.UndoAttr):
		return fmt.Sprintf("left as it is (it sets no %s; see \"flow tasks %s\")", kind.UndoAttr, inst.Task.Type)
	}
	return ""
}

// undoReason says how a destroy undoes inst.
func undoReason(inst *plan.Instance) string {
	if attr := inst.Task.Kind.UndoAttr; attr != "" {
		return "runs its " + attr
	}
	return fmt.Sprintf("undone by its type (see \"flow tasks %s\")", inst.Task.Type)
}

func setsAttr(inst *plan.Instance, name string) bool {
	_, set := inst.Task.Attributes[name]
	return set
}

// blocker is a dependent of addr that was not destroyed, or "".
func (u *undoOp) blocker(p *plan.Plan, addr string) string {
	for _, dep := range p.Dependents(addr) {
		if u.blocked[dep] {
			return dep
		}
	}
	return ""
}

// undo decodes inst and calls its Destroy; a panic becomes its error.
func undo(ctx context.Context, w *walk.Walk, inst *plan.Instance, ectx *hcl.EvalContext, ediags hcl.Diagnostics, created *state.Instance, orphaned bool) (res *attemptResult) {
	res = &attemptResult{inst: inst, attempt: 1, began: time.Now()}
	rec := w.Update(inst.Addr, func(rec *state.Instance) {
		rec.Status, rec.StartedAt, rec.FinishedAt = state.Running, timePtr(res.began), nil
		rec.Attempts++
	})
	w.Submit(rec, nil)
	stdout, stderr := w.Streams(inst.Addr, 1)
	opts := w.Options()
	err := func() (err error) {
		defer func() {
			if p := recover(); p != nil {
				err = fmt.Errorf("task panicked: %v", p)
				opts.Logger.Error("destroy panicked", "address", inst.Addr, "stack", string(debug.Stack()))
			}
		}()
		env := &tasks.Env{Address: inst.Addr, Attempt: 1, Stdout: stdout, Stderr: stderr,
			Logger: opts.Logger.Named(inst.Addr), TransientRetry: opts.TransientRetry,
			Dir: objectDir(w, inst.Addr, created), Lineage: opts.Lineage, Started: noteGroup(w, inst.Addr)}
		if ownObject(created) {
			task, err := destroyTask(w, inst, ectx, ediags, created, orphaned)
			if err != nil {
				return err
			}
			var recorded tasks.Outputs
			if created.Status == state.Succeeded && len(created.Outputs) > 0 {
				recorded = decodeOutputs(created)
			}
			if err := w.Confirmed(); err != nil { // last before acting
				return err
			}
			if err := task.(tasks.Destroyer).Destroy(ctx, env, recorded); err != nil {
				return err
			}
		}
		// Then what it made before and could not undo then: newest first.
		for i := len(created.Deposed) - 1; i >= 0; i-- {
			if err := undoObject(ctx, w, inst, env, created.Deposed[i], nil); err != nil {
				return fmt.Errorf("undo what it made before: %w", err)
			}
		}
		return nil
	}()
	stdout.Flush()
	stderr.Flush()
	res.finished = time.Now()
	switch {
	case err != nil && ctx.Err() != nil:
		res.kind, res.err = outcomeInterrupted, ctx.Err()
	case err != nil:
		res.kind, res.err = outcomeFailed, err
	default:
		res.kind = outcomeSucceeded
	}
	return res
}

// destroyTask is inst's task as Destroy needs it: decoded from the object its record
// holds (see object.go), with only a withheld secret taken from the flow. A record an
// older flow wrote holds no object: then the task is evaluated from the flow with what
// the undone run recorded, and the walk says so.
func destroyTask(w *walk.Walk, inst *plan.Instance, ectx *hcl.EvalContext, ediags hcl.Diagnostics, created *state.Instance, orphaned bool) (tasks.Task, error) {
	if orphaned {
		w.Say("%s: no longer in the flow; destroying", inst.Addr)
		return recordedTask(inst.Task.Kind, created, nil)
	}
	if created.Inputs != nil {
		var now map[string]cty.Value
		if !ediags.HasErrors() {
			if ev, d := w.Plan().Evaluate(inst, ectx, false); !d.HasErrors() {
				now = ev.Inputs
				if fp, hashes := plan.Fingerprint(inst.Task, ev.Inputs); wholyKnown(ev.Inputs) && created.Fingerprint != "" && fp != created.Fingerprint {
					w.Say("%s: the flow now says otherwise (%s); destroying what the run made, as recorded", inst.Addr, changedAttrs(created.AttrHashes, hashes))
				}
			}
		}
		w.Say("%s: destroying", inst.Addr)
		return recordedTask(inst.Task.Kind, created, now)
	}
	if ediags.HasErrors() {
		return nil, errors.New(diagText(ediags))
	}
	ev, whole, err := evaluateForDestroy(w.Plan(), inst, ectx)
	if err != nil {
		return nil, err
	}
	w.Say("%s: recorded by an older flow, which kept no record of what it made; destroying what the flow says now", inst.Addr)
	if fp, hashes := plan.Fingerprint(inst.Task, ev.Inputs); whole && created.Fingerprint != "" && fp != created.Fingerprint {
		w.Say("%s: inputs differ from the run's (%s); destroying what they say now", inst.Addr, changedAttrs(created.AttrHashes, hashes))
	}
	return ev.Task, nil
}

// objectDir is the directory an undo of addr acts in: the one its record names while
// it exists, else the walk's.
func objectDir(w *walk.Walk, addr string, rec *state.Instance) string {
	opts := w.Options()
	switch {
	case rec == nil || rec.Dir == "" || rec.Dir == opts.Dir || opts.Moved:
		return opts.Dir
	case isDir(rec.Dir):
		return rec.Dir
	}
	w.Say("%s: the directory it was made in, %s, is gone; undoing it in %s", addr, rec.Dir, opts.Dir)
	return opts.Dir
}

// Finish records how a destroy ended with one instance. Whatever the outcome, what
// the instance depends on gets its turn once the record is durable; a failure or an
// interruption keeps it.
func (u *undoOp) Finish(w *walk.Walk, o walk.Outcome) {
	res := o.(*attemptResult)
	addr := res.inst.Addr
	elapsed := walk.Round(res.finished.Sub(res.began))
	if res.kind == outcomeUpToDate {
		w.Say("%s: already destroyed", addr)
		w.Release(addr)
		return
	}
	var line string
	rec := w.Update(addr, func(rec *state.Instance) {
		switch res.kind {
		case outcomeKept:
			rec.Status, rec.Reason = state.Skipped, res.reason
			line = fmt.Sprintf("%s: %s", addr, res.reason)
			// Kept only because what depends on it stays: not a removal the state
			// forgets (LiveInstances), so a later run or destroy undoes it.
			rec.Removed = rec.Removed && !res.blocks
		case outcomeSucceeded:
			rec.Status, rec.FinishedAt = state.Succeeded, timePtr(res.finished)
			line = fmt.Sprintf("%s: destroyed in %s", addr, elapsed)
			if o := u.orphans[addr]; o != nil {
				rec.Reason = fmt.Sprintf("no longer in the flow; undone (run %d created it)", o.Run)
			}
		case outcomeInterrupted:
			rec.Status, rec.Error = state.Interrupted, "interrupted"
			if rec.StartedAt != nil {
				rec.FinishedAt = timePtr(res.finished)
				line = fmt.Sprintf("%s: interrupted after %s", addr, elapsed)
			}
		case outcomeFailed:
			rec.Status, rec.FinishedAt, rec.Error = state.Failed, timePtr(res.finished), w.Plan().Scope.Redact(res.err.Error())
			line = fmt.Sprintf("%s: destroy failed in %s: %s", addr, elapsed, rec.Error)
		}
	})
	if res.kind == outcomeFailed {
		w.Failed(addr)
	}
	u.blocked[addr] = res.blocks || res.kind == outcomeFailed || res.kind == outcomeInterrupted
	if line != "" {
		w.Say("%s", line)
	}
	var log []byte
	if rec.StartedAt != nil {
		log = w.Log(addr)
	}
	w.Commit(rec, log)
}

func decodeOutputs(rec *state.Instance) tasks.Outputs {
	outs := tasks.Outputs{}
	for name, sv := range rec.Outputs {
		if v, err := sv.Decode(); err == nil {
			outs[name] = v
		}
	}
	return outs
}

// evaluateForDestroy evaluates inst's inputs and decodes its task for Destroy, and
// reports whether every input was known. A type with DestroyReads needs only those
// attributes known: the rest (a secret, never stored, reads as unknown) are decoded as
// zero values and the task is not validated, since Destroy does not read them. Any
// other type needs every input, and a valid task, as Run does.
func evaluateForDestroy(p *plan.Plan, inst *plan.Instance, ectx *hcl.EvalContext) (*plan.Evaluated, bool, error) {
	reads := inst.Task.Kind.DestroyReads
	ev, diags := p.Evaluate(inst, ectx, len(reads) == 0)
	if diags.HasErrors() {
		return nil, false, errors.New(diagText(diags))
	}
	if len(reads) == 0 {
		if ev.Task == nil {
			return nil, false, errNotStored
		}
		return ev, true, nil
	}
	whole := true
	plain := make(map[string]cty.Value, len(ev.Inputs))
	for name, v := range ev.Inputs {
		v, _ = v.UnmarkDeep()
		if !v.IsWhollyKnown() {
			whole = false
			if slices.Contains(reads, name) {
				return nil, false, fmt.Errorf("%s: %w", name, errNotStored)
			}
			v = cty.NullVal(v.Type())
		}
		plain[name] = v
	}
	ev.Task = inst.Task.Kind.New()
	if err := tasks.Decode(ev.Task, plain); err != nil {
		return nil, false, err
	}
	return ev, whole, nil
}

var errNotStored = errors.New("its inputs read outputs that were not stored (they held a secret, or their task did not finish)")
