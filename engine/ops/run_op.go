package ops

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/flowdev/flow/engine/plan"
	"github.com/flowdev/flow/engine/state"
	"github.com/flowdev/flow/engine/walk"
)

// NewRunner prepares a run of p: a walk of its graph, each instance run (runOp). It
// writes nothing until Run.
func NewRunner(p *plan.Plan, opts walk.Options) *walk.Runner {
	return walk.New(p, runShape(p), opts)
}

// runShape is the walk of a run of p: p's order and edges, each instance run.
func runShape(p *plan.Plan) *walk.Shape {
	return &walk.Shape{Order: p.Order, Op: &runOp{}}
}

// runOp runs each instance: what a walk of a plan as the planner made it does (see
// attempt.go for one attempt). Its state is the walk's goroutine's, but for reruns,
// which workers share under mu.
type runOp struct {
	upToDate int // instances whose earlier success stood

	mu     sync.Mutex
	reruns map[string]bool // instances whose objects a cascade undid (deposed.go)
}

var _ walk.Operation = (*runOp)(nil)

// Initial resumes an instance's record from the run being resumed, with what it waits
// for in this run, so the run's graph can be drawn (flow ui).
func (*runOp) Initial(inst *plan.Instance, prev *state.Instance) *state.Instance {
	rec := &state.Instance{Address: inst.Addr, Type: inst.Task.Type, Status: state.Pending}
	// A record an orphans' walk wrote (Removed) holds no object of the instance (its
	// undo's outcome only): the instance, back in the flow, starts afresh, and the
	// live record keeps what it made.
	if prev != nil && !prev.Removed {
		cp := *prev
		rec = &cp
	}
	rec.Order = inst.Index
	rec.Deps, rec.DepsKnown = inst.Deps, true
	return rec
}

func (*runOp) Values(*plan.Plan) map[string]cty.Value { return map[string]cty.Value{} }

func (*runOp) Settle(*walk.Walk, *plan.Instance) walk.Outcome { return nil }

func (*runOp) Context(w *walk.Walk, inst *plan.Instance) (*hcl.EvalContext, hcl.Diagnostics) {
	return valuesContext(w, inst)
}

func (op *runOp) Perform(ctx context.Context, w *walk.Walk, inst *plan.Instance, attempt int, ectx *hcl.EvalContext, diags hcl.Diagnostics) walk.Outcome {
	return op.runAttempt(ctx, w, inst, attempt, ectx, diags)
}

func (*runOp) StopsOnInterrupt() bool { return true }

// Judge: a run failed unless every instance succeeded (or stood), and was interrupted
// when a signal stopped it; its outputs are what its values let be evaluated.
func (op *runOp) Judge(w *walk.Walk, res *walk.Result) {
	res.UpToDate = op.upToDate
	for _, rec := range res.Records {
		if rec.Status != state.Succeeded {
			res.Status = state.Failed
			break
		}
	}
	if w.Interrupted() {
		res.Status = state.Interrupted
	}
	res.Outputs = w.Plan().EvalOutputs(w.Values())
}

// valuesContext is inst's evaluation context over the values of the instances that
// ended so far.
func valuesContext(w *walk.Walk, inst *plan.Instance) (*hcl.EvalContext, hcl.Diagnostics) {
	values := w.Values()
	return w.Plan().EvalContext(inst, func(addr string) cty.Value { return values[addr] })
}

// Finish records how an attempt of a run ended: a success is durable before its
// dependents start, a failure is retried as its policy says or skips its dependents.
func (op *runOp) Finish(w *walk.Walk, o walk.Outcome) {
	res := o.(*attemptResult)
	addr := res.inst.Addr
	elapsed := walk.Round(res.finished.Sub(res.began))
	switch res.kind {
	case outcomeUpToDate:
		w.Keep(addr, res.value)
		op.upToDate++
		prev := w.Options().Previous[addr]
		rec := w.Update(addr, func(rec *state.Instance) {
			*rec = *prev
			rec.Reason = "up to date: " + res.reason
			rec.Deps, rec.DepsKnown = res.inst.Deps, true
			rec.Dir = movedHere(w.Options(), prev).Dir
		})
		// The graph changed around it (this run's edges), or the project moved here.
		if !prev.DepsKnown || !slices.Equal(prev.Deps, rec.Deps) || rec.Dir != prev.Dir {
			w.Submit(rec, nil)
		}
		w.Say("%s: up to date (%s)", addr, res.reason)
		w.Release(addr) // its record is already durable
	case outcomeSucceeded:
		w.Keep(addr, res.value)
		rec := w.Update(addr, func(rec *state.Instance) {
			rec.Status, rec.FinishedAt, rec.Error, rec.Reason = state.Succeeded, timePtr(res.finished), "", res.reason
			rec.Redacted, rec.Plugin = res.redacted, pluginOf(w.Plan(), res.inst.Task.Type)
		})
		// Outputs and hashes go to the state file only: the record kept in memory (for
		// status and the summary) would otherwise grow a long run's heap with every success.
		rec.Outputs, rec.Fingerprint, rec.AttrHashes = res.stored, res.fingerprint, res.attrHashes
		rec.Inputs, rec.Withheld, rec.Retain = res.inputs, res.withheld, res.inst.Task.RetainOnDestroy
		rec.Dir, rec.Group, rec.GroupStart = w.Options().Dir, 0, 0
		if res.inputs != nil { // it can be undone: once the flow drops it, in dependency order
			rec.Deps, rec.DepsKnown = res.inst.Deps, true
		}
		// Only dependents must wait for the record to be durable; a leaf's success rides
		// along with the next commit (a kill before then runs it again on resume).
		w.Commit(rec, w.Log(addr))
		w.Say("%s: succeeded in %s", addr, elapsed)
	case outcomeInterrupted:
		rec := w.Update(addr, func(rec *state.Instance) {
			rec.Status, rec.FinishedAt, rec.Error = state.Interrupted, timePtr(res.finished), "interrupted"
			rec.Plugin = pluginOf(w.Plan(), res.inst.Task.Type)
		})
		w.Submit(rec, w.Log(addr))
		w.Say("%s: interrupted after %s", addr, elapsed)
	case outcomeFailed:
		failed(w, res, elapsed)
	}
}

// failed ends a failed attempt: another one after a backoff when it may, else the
// instance fails, its dependents are skipped and, with --fail-fast, the run stops.
func failed(w *walk.Walk, res *attemptResult, elapsed time.Duration) {
	addr := res.inst.Addr
	msg := w.Plan().Scope.Redact(res.err.Error())
	if res.retryable && w.Retry(res.inst, res.attempt, res.retry, elapsed, msg) {
		return
	}
	w.Failed(addr)
	rec := w.Update(addr, func(rec *state.Instance) {
		rec.Status, rec.FinishedAt, rec.Error = state.Failed, timePtr(res.finished), msg
		rec.Plugin = pluginOf(w.Plan(), res.inst.Task.Type)
	})
	w.Submit(rec, w.Log(addr))
	w.Say("%s: failed in %s: %s", addr, elapsed, msg)
	w.SkipDependents(addr)
	if w.Options().FailFast {
		w.Stop()
	}
}

func timePtr(t time.Time) *time.Time { t = t.UTC(); return &t }
