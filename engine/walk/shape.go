package walk

import (
	"context"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/flowdev/flow/engine/plan"
	"github.com/flowdev/flow/engine/state"
)

// A Shape is what a walk follows: which instances of the plan it visits, what each
// waits for, which of the ready ones starts first, and what it does with each, its
// operation. The walker has no mode of its own: whoever builds the shape decides
// whether it is the plan's graph or its reverse, as Terraform's walker walks a graph
// its planner built beforehand.
type Shape struct {
	// Order is the instances walked, in plan order.
	Order []string
	// Waits and Frees are the walk's edges when they are not the plan's: how many
	// instances each waits for, and which instances each one's end frees. Both nil:
	// the plan's dependencies and dependents.
	Waits map[string]int
	Frees map[string][]string
	// LatestFirst starts ready instances latest in plan order first.
	LatestFirst bool
	Op          Operation
}

// An Operation is what a walk does with each instance: the walker calls it and keeps
// the schedule, the operation decides and records the outcome. Initial is called by
// New; Perform runs on a worker of its own, one per attempt; every other method is
// called on the walk's goroutine (see Walk).
type Operation interface {
	// Initial is the walk's record of inst before anything starts, given prev, the
	// record an earlier attempt of the same walk left (nil if none). Called by New.
	Initial(inst *plan.Instance, prev *state.Instance) *state.Instance
	// Values is what dependents read of the instances before any finishes; the walk
	// owns the map from then on (see Walk.Keep). Called once, as Run starts.
	Values(p *plan.Plan) map[string]cty.Value
	// Context is inst's evaluation context, built before Perform.
	Context(w *Walk, inst *plan.Instance) (*hcl.EvalContext, hcl.Diagnostics)
	// Settle ends inst without a worker when it needs none, and returns how; nil: it
	// does, and Perform runs it.
	Settle(w *Walk, inst *plan.Instance) Outcome
	// Perform runs one attempt of inst (attempt counts from 1) with the context and
	// diagnostics Context built. ctx ends when the walk is interrupted or stops.
	Perform(ctx context.Context, w *Walk, inst *plan.Instance, attempt int, ectx *hcl.EvalContext, diags hcl.Diagnostics) Outcome
	// Finish records an attempt's outcome (Settle's or Perform's). Unless it asks for
	// another attempt (Walk.Retry), the instance has ended when Finish returns.
	Finish(w *Walk, o Outcome)
	// StopsOnInterrupt: an interrupted walk starts nothing more (a run), rather than
	// settling each remaining instance as its turn comes.
	StopsOnInterrupt() bool
	// Judge sets res's status (and outputs) from its final records.
	Judge(w *Walk, res *Result)
}

// An Outcome is how one attempt of one instance ended, as an operation reports it; the
// walker reads only which instance it was, and hands it back to the operation's Finish.
type Outcome interface {
	Instance() *plan.Instance
}

// waitsFor is how many instances addr waits for in the walk.
func (r *Runner) waitsFor(addr string) int {
	if r.shape.Waits != nil {
		return r.shape.Waits[addr]
	}
	return len(r.plan.Instances[addr].Deps)
}

// next is the instances that wait for addr in the walk: its dependents in the plan,
// unless the shape names others.
func (r *Runner) next(addr string) []string {
	if r.shape.Frees != nil {
		return r.shape.Frees[addr]
	}
	return r.plan.Dependents(addr)
}

// rank orders ready instances: plan order, or latest first.
func (r *Runner) rank(inst *plan.Instance) int {
	if r.shape.LatestFirst {
		return -inst.Index
	}
	return inst.Index
}
