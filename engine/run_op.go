package engine

import (
	"context"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/flowdev/flow/engine/state"
)

// runOp runs each instance: what a walk of a plan as the planner made it does (see
// attempt.go for one attempt, execute.go for how its outcome is recorded).
type runOp struct{}

var _ operation = runOp{}

// initial resumes an instance's record from the run being resumed, with what it waits
// for in this run, so the run's graph can be drawn (flow ui).
func (runOp) initial(inst *Instance, prev *state.Instance) *state.Instance {
	rec := &state.Instance{Address: inst.Addr, Type: inst.Task.Type, Status: state.Pending}
	if prev != nil {
		cp := *prev
		rec = &cp
	}
	rec.Order = inst.Index
	rec.Deps, rec.DepsKnown = inst.Deps, true
	return rec
}

func (runOp) values(*Plan) map[string]cty.Value { return map[string]cty.Value{} }

func (runOp) settle(*coordinator, *Instance) *attemptResult { return nil }

func (runOp) context(c *coordinator, inst *Instance) (*hcl.EvalContext, hcl.Diagnostics) {
	return c.valuesContext(inst)
}

func (runOp) perform(ctx context.Context, c *coordinator, inst *Instance, attempt int, ectx *hcl.EvalContext, diags hcl.Diagnostics) *attemptResult {
	return c.attempt(ctx, inst, attempt, ectx, diags)
}

func (runOp) finish(c *coordinator, res *attemptResult) { c.finishAttempt(res) }

func (runOp) stopsOnInterrupt() bool { return true }

// judge: a run failed unless every instance succeeded (or stood), and was interrupted
// when a signal stopped it; its outputs are what its values let be evaluated.
func (runOp) judge(c *coordinator, res *Result) {
	for _, rec := range res.Records {
		if rec.Status != state.Succeeded {
			res.Status = state.Failed
			break
		}
	}
	if c.interrupted {
		res.Status = state.Interrupted
	}
	res.Outputs = c.plan.EvalOutputs(c.values)
}
