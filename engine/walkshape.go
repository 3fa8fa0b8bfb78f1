package engine

import (
	"context"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/flowdev/flow/engine/state"
)

// A walk's shape is the plan's: which instances it visits, what each waits for, which
// of the ready ones starts first, and what it does with each, its operation. A plan
// walks as a run; destroyShape reverses it for a destroy. The walker
// (Runner.Run) follows the shape it is given (NewRunner: a run's; NewDestroyer: a
// destroy's) and has no mode of its own, as Terraform's walker walks a destroy graph
// its planner reversed beforehand.
type walkShape struct {
	// order is the instances walked, in plan order.
	order []string
	// waits and frees are the walk's edges when they are not the plan's: how many
	// instances each waits for, and which instances each one's end frees.
	waits map[string]int
	frees map[string][]string
	// latestFirst starts ready instances latest in plan order first.
	latestFirst bool
	op          operation
}

// An operation is what a walk does with each instance; the coordinator calls it and
// keeps the schedule, the operation decides and records the outcome.
type operation interface {
	// initial is the walk's record of inst before anything starts, given prev, the
	// record an earlier attempt of the same walk left (nil if none).
	initial(inst *Instance, prev *state.Instance) *state.Instance
	// values is what dependents read of the instances before any finishes.
	values(p *Plan) map[string]cty.Value
	// context is inst's evaluation context, built on the coordinator before perform.
	context(c *coordinator, inst *Instance) (*hcl.EvalContext, hcl.Diagnostics)
	// settle ends inst on the coordinator when it needs no worker; nil: it does.
	settle(c *coordinator, inst *Instance) *attemptResult
	// perform runs one attempt of inst on a worker.
	perform(ctx context.Context, c *coordinator, inst *Instance, attempt int, ectx *hcl.EvalContext, diags hcl.Diagnostics) *attemptResult
	// finish records an attempt's outcome, on the coordinator.
	finish(c *coordinator, res *attemptResult)
	// stopsOnInterrupt: an interrupted walk starts nothing more (a run), rather than
	// settling each remaining instance as its turn comes (a destroy keeps them).
	stopsOnInterrupt() bool
	// judge sets res's status (and outputs) from its final records.
	judge(c *coordinator, res *Result)
}

// runShape is the walk of a run of p: p's order and edges.
func runShape(p *Plan) *walkShape {
	return &walkShape{order: p.Order, op: runOp{}}
}

// waitsFor is how many instances addr waits for in the walk.
func (r *Runner) waitsFor(addr string) int {
	if r.shape.waits != nil {
		return r.shape.waits[addr]
	}
	return len(r.plan.Instances[addr].Deps)
}

// next is the instances that wait for addr in the walk: its dependents in a run, what
// it depends on in a destroy.
func (r *Runner) next(addr string) []string {
	if r.shape.frees != nil {
		return r.shape.frees[addr]
	}
	return r.plan.Dependents(addr)
}

// rank orders ready instances: plan order, or latest first.
func (r *Runner) rank(inst *Instance) int {
	if r.shape.latestFirst {
		return -inst.Index
	}
	return inst.Index
}
