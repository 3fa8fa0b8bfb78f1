package ops

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sort"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"

	"github.com/flowdev/flow/engine/config"
	"github.com/flowdev/flow/engine/plan"
	"github.com/flowdev/flow/engine/state"
	"github.com/flowdev/flow/engine/walk"
	"github.com/flowdev/flow/tasks"
)

type outcome int

const (
	outcomeSucceeded outcome = iota
	outcomeFailed
	outcomeInterrupted
	outcomeUpToDate // a run: its success stands; a destroy: already undone
	outcomeKept     // a destroy leaves it as it is
)

// attemptResult is what a worker reports after one attempt of one instance.
type attemptResult struct {
	inst            *plan.Instance
	attempt         int
	kind            outcome
	err             error
	retryable       bool
	retry           config.RetryPolicy
	reason          string
	blocks          bool      // outcomeKept: what the instance depends on stays too
	value           cty.Value // what dependents read
	stored          map[string]state.Value
	redacted        bool
	fingerprint     string
	attrHashes      map[string]string
	inputs          map[string]state.Value // storedInputs
	withheld        []string
	began, finished time.Time
}

// Instance is the instance the attempt was of (walk.Outcome).
func (r *attemptResult) Instance() *plan.Instance { return r.inst }

// runAttempt evaluates inst against its finished dependencies and, unless its previous
// success still holds, runs it once. It never panics: a panic in a task becomes the
// attempt's error.
func (op *runOp) runAttempt(ctx context.Context, w *walk.Walk, inst *plan.Instance, n int, ectx *hcl.EvalContext, ediags hcl.Diagnostics) (res *attemptResult) {
	opts := w.Options()
	res = &attemptResult{inst: inst, attempt: n, began: time.Now()}
	defer func() {
		if p := recover(); p != nil {
			res.kind, res.err, res.retryable = outcomeFailed, fmt.Errorf("task panicked: %v", p), false
			opts.Logger.Error("task panicked", "address", inst.Addr, "stack", string(debug.Stack()))
		}
		res.finished = time.Now()
	}()
	ev, diags := w.Plan().Evaluate(inst, ectx, true)
	diags = append(ediags, diags...)
	if diags.HasErrors() {
		res.kind, res.err = outcomeFailed, errors.New(diagText(diags))
		return res
	}
	res.retry = ev.Retry
	res.fingerprint, res.attrHashes = plan.Fingerprint(inst.Task, ev.Inputs)
	replacing := n == 1 && plan.AnySelects(opts.Replace, inst.Addr)
	rerun := op.rerun(inst.Addr)
	switch {
	case replacing:
		res.reason = replaceReason(inst, opts.Previous[inst.Addr])
		w.Say("%s: replaced (--replace); running it", inst.Addr)
	case n == 1 && rerun:
		res.reason = "what it made was undone first, with what it was built on"
		w.Say("%s: %s; running it again", inst.Addr, res.reason)
	case n == 1:
		prev := opts.Previous[inst.Addr]
		if value, why, ok := restore(w.Plan(), inst, ev, prev, res.fingerprint, res.attrHashes); ok {
			if why = refresh(ctx, opts, inst, ev, prev); why == "" {
				res.kind, res.value, res.reason = outcomeUpToDate, value, "succeeded before with the same inputs"
				return res
			}
			res.reason = why
			w.Say("%s: %s; running it again", inst.Addr, why)
		} else if why != "" {
			res.reason = why
			w.Say("%s: %s; running it", inst.Addr, why)
		}
	}
	if n == 1 {
		stopSurvivor(w, inst.Addr, opts.Previous[inst.Addr])
	}
	// What the attempt is about to make, and what it must undo first, are durable
	// before it acts: a kill or a failure from here on leaves both recorded.
	var deposed []*state.Instance
	var legacy *state.Instance // an old object an older flow recorded without its inputs
	if n == 1 {
		deposed = carried(opts, inst.Addr, w.Record(inst.Addr))
		var old *state.Instance
		switch prev := replaced(opts, inst.Addr); {
		case rerun: // a cascade undid its object already
		case replacing && undoesOnReplace(inst, prev):
			old = prev
		case !replacing:
			old = objectChanged(w, inst, ev)
		}
		switch {
		case old != nil && old.HasObject():
			deposed = append(deposed, deposedObject(opts, old))
		case old != nil:
			legacy = old
		}
	}
	var inputs map[string]state.Value
	var withheld []string
	if keepsObject(inst.Task.Kind) {
		inputs, withheld = storedInputs(plan.WithoutSensitiveKeys(inst.Task.Attrs, ev.Inputs))
	}
	rec := w.Update(inst.Addr, func(rec *state.Instance) {
		rec.Status, rec.StartedAt, rec.FinishedAt = state.Running, timePtr(res.began), nil
		rec.Attempts++
		rec.Removed, rec.Holds = false, false // a removal an earlier run recorded: it is made again now
		rec.Inputs, rec.Withheld, rec.Dir = inputs, withheld, opts.Dir
		rec.Deps, rec.DepsKnown, rec.Retain = inst.Deps, true, inst.Task.RetainOnDestroy
		if n == 1 {
			rec.Deposed = deposed
		}
	})
	// Only an object an undo will act on needs its record durable first (one that is
	// never undone — its type cannot be, it sets no undo, it is retained — leaves
	// nothing a kill could make the state forget): the others' running records ride
	// along with the next commit.
	if keepReason(inst) == "" || len(rec.Deposed) > 0 || legacy != nil {
		if err := w.Durable(rec); err != nil {
			res.kind, res.err = outcomeFailed, fmt.Errorf("record the attempt before it acts: %w", err)
			return res
		}
	} else {
		w.Submit(rec, nil)
	}
	op.runTask(ctx, w, inst, ev, res, len(rec.Deposed) > 0 || legacy != nil, legacy)
	return res
}

// runTask runs inst's evaluated task once. With undoFirst, it first undoes what
// inst made before: the objects built on it (cascade), then the deposed objects its
// record holds, then legacy, an old object an older flow recorded without its inputs
// (see undoRecorded).
func (op *runOp) runTask(ctx context.Context, w *walk.Walk, inst *plan.Instance, ev *plan.Evaluated, res *attemptResult, undoFirst bool, legacy *state.Instance) {
	stdout, stderr := w.Streams(inst.Addr, res.attempt)
	if res.attempt > 1 {
		w.Say("%s: started (attempt %d of %d)", inst.Addr, res.attempt, ev.Retry.Attempts)
	} else {
		w.Say("%s: started", inst.Addr)
	}
	opts := w.Options()
	env := &tasks.Env{Address: inst.Addr, Attempt: res.attempt, Stdout: stdout, Stderr: stderr,
		Logger: opts.Logger.Named(inst.Addr), TransientRetry: opts.TransientRetry,
		Dir: opts.Dir, Lineage: opts.Lineage, Started: noteGroup(w, inst.Addr)}
	runCtx, cancel := ctx, context.CancelFunc(func() {})
	if ev.Timeout > 0 {
		runCtx, cancel = context.WithTimeout(ctx, ev.Timeout)
	}
	defer cancel()
	var outputs tasks.Outputs
	var err error
	// Last before acting: the lock may have fallen in doubt while this process was paused.
	err = w.Confirmed()
	if undoFirst && err == nil {
		err = op.cascade(runCtx, w, inst, env)
		if err == nil {
			err = undoDeposed(runCtx, w, inst, env, ev.Inputs)
		}
		if err == nil && legacy != nil {
			err = undoRecorded(runCtx, w, inst, ev, env, legacy)
		}
		if err != nil {
			err = fmt.Errorf("undo before replacing: %w", err)
		}
	}
	if err == nil {
		if err = w.Confirmed(); err == nil {
			outputs, err = ev.Task.Run(runCtx, env)
		}
	}
	stdout.Flush()
	stderr.Flush()
	switch {
	case ctx.Err() != nil:
		res.kind, res.err = outcomeInterrupted, ctx.Err()
	case err != nil && runCtx.Err() == context.DeadlineExceeded:
		res.kind, res.err, res.retryable = outcomeFailed, fmt.Errorf("timed out after %s", ev.Timeout), true
	case err != nil:
		res.kind, res.err, res.retryable = outcomeFailed, err, true
	default:
		res.kind = outcomeSucceeded
		if err := publish(w.Plan(), inst, ev, outputs, res); err != nil {
			res.kind, res.err = outcomeFailed, err
		}
	}
}

// publish converts outputs to their declared types, builds the value dependents see
// (when an expression reads it), and encodes outputs for the state unless they derive
// from a secret.
func publish(p *plan.Plan, inst *plan.Instance, ev *plan.Evaluated, outputs tasks.Outputs, res *attemptResult) error {
	conv := make(map[string]cty.Value, len(inst.Task.Kind.Outputs))
	redact := false
	for _, o := range inst.Task.Kind.Outputs {
		v, ok := outputs[o.Name]
		if !ok {
			continue
		}
		cv, err := convert.Convert(v, o.Type)
		if err != nil {
			return fmt.Errorf("output %q: %w", o.Name, err)
		}
		secret := o.Sensitive || cv.ContainsMarked()
		if secret || (ev.Sensitive && !o.Clean) {
			cv, _ = cv.UnmarkDeep()
			cv = cv.Mark(config.Sensitive)
			redact = true
		}
		if secret {
			p.Scope.AddSecrets(cv)
		}
		conv[o.Name] = cv
	}
	if inst.Task.Read {
		res.value = plan.InstanceValue(inst.Task, ev.Inputs, conv)
	}
	if keepsObject(inst.Task.Kind) {
		res.inputs, res.withheld = storedInputs(plan.WithoutSensitiveKeys(inst.Task.Attrs, ev.Inputs))
	}
	if redact {
		res.redacted = true
		return nil
	}
	res.stored = make(map[string]state.Value, len(conv))
	for name, v := range conv {
		sv, err := state.EncodeValue(v)
		if err != nil {
			return fmt.Errorf("output %q: %w", name, err)
		}
		res.stored[name] = sv
	}
	return nil
}

// restore decides whether a previous success stands: same fingerprint, outputs kept.
// Otherwise it says why the instance runs again ("" when it never ran).
func restore(p *plan.Plan, inst *plan.Instance, ev *plan.Evaluated, prev *state.Instance, fp string, hashes map[string]string) (cty.Value, string, bool) {
	switch {
	case prev == nil || prev.Status == state.Pending:
		return cty.NilVal, "", false
	case prev.Status != state.Succeeded:
		return cty.NilVal, "", false
	case prev.Removed:
		return cty.NilVal, "undone when it had left the flow", false
	case prev.Redacted:
		return cty.NilVal, "its outputs held a secret and were not stored", false
	case prev.Fingerprint != fp:
		return cty.NilVal, "inputs changed since it succeeded (" + changedAttrs(prev.AttrHashes, hashes) + ")", false
	}
	outs := map[string]cty.Value{}
	for name, sv := range prev.Outputs {
		v, err := sv.Decode()
		if err != nil {
			return cty.NilVal, "its recorded outputs could not be read", false
		}
		outs[name] = v
	}
	if !inst.Task.Read {
		return cty.NilVal, "succeeded before with the same inputs", true
	}
	return plan.InstanceValue(inst.Task, ev.Inputs, outs), "succeeded before with the same inputs", true
}

func changedAttrs(before, after map[string]string) string {
	var names []string
	for k, v := range after {
		if before[k] != v {
			names = append(names, k)
		}
	}
	for k := range before {
		if _, ok := after[k]; !ok {
			names = append(names, k)
		}
	}
	if len(names) == 0 {
		return "task type"
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// diagText renders diagnostics on one line each, with their source position.
func diagText(diags hcl.Diagnostics) string {
	var lines []string
	for _, d := range diags {
		if d.Severity != hcl.DiagError {
			continue
		}
		s := d.Summary
		if d.Detail != "" {
			s += ": " + d.Detail
		}
		if d.Subject != nil {
			s = d.Subject.String() + ": " + s
		}
		lines = append(lines, s)
	}
	return strings.Join(lines, "; ")
}

// storedInputs encodes inputs for the state, leaving out (and naming) those that
// derive from a secret or cannot be encoded.
func storedInputs(inputs map[string]cty.Value) (map[string]state.Value, []string) {
	stored := make(map[string]state.Value, len(inputs))
	var withheld []string
	for name, v := range inputs {
		sv, err := state.EncodeValue(v)
		if v.ContainsMarked() || !v.IsWhollyKnown() || err != nil {
			withheld = append(withheld, name)
			continue
		}
		stored[name] = sv
	}
	sort.Strings(withheld)
	return stored, withheld
}
