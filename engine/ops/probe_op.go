package ops

import (
	"context"
	"io"
	"sync"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/flowdev/flow/engine/plan"
	"github.com/flowdev/flow/engine/state"
	"github.com/flowdev/flow/engine/walk"
)

// A preview's refresh is a walk of its own by the one walker: its shape visits the
// instances whose success the preview would let stand and can be probed, with no edges
// (a probe reads no other instance's result), and its operation, probeOp, probes each
// one. So probes obey --parallelism and Ctrl-C as a run's tasks do, and no pool of
// their own decides how many run at once.

// probeShape is the walk that probes order's instances (in plan order) with op.
func probeShape(order []string, op *probeOp) *walk.Shape {
	waits := make(map[string]int, len(order))
	for _, addr := range order {
		waits[addr] = 0
	}
	return &walk.Shape{Order: order, Waits: waits, Frees: map[string][]string{}, Op: op}
}

// probeOp probes each instance of its jobs and keeps what it found, by address. Its
// Perform runs on the walk's workers; found is read once the walk has ended.
type probeOp struct {
	jobs    map[string]probeJob
	dir     string
	lineage string
	logger  hclog.Logger // nil: none

	mu    sync.Mutex
	found map[string]string
}

var _ walk.Operation = (*probeOp)(nil)

// probed is how one probe ended.
type probed struct {
	inst  *plan.Instance
	drift string
}

func (p probed) Instance() *plan.Instance { return p.inst }

func (*probeOp) Initial(inst *plan.Instance, _ *state.Instance) *state.Instance {
	return &state.Instance{Address: inst.Addr, Type: inst.Task.Type, Status: state.Pending}
}

func (*probeOp) Values(*plan.Plan) map[string]cty.Value { return map[string]cty.Value{} }

func (*probeOp) Context(*walk.Walk, *plan.Instance) (*hcl.EvalContext, hcl.Diagnostics) {
	return nil, nil
}

func (*probeOp) Settle(*walk.Walk, *plan.Instance) walk.Outcome { return nil }

func (o *probeOp) Perform(ctx context.Context, _ *walk.Walk, inst *plan.Instance, _ int, _ *hcl.EvalContext, _ hcl.Diagnostics) walk.Outcome {
	j := o.jobs[inst.Addr]
	logger := hclog.NewNullLogger()
	if o.logger != nil {
		logger = o.logger.Named(inst.Addr)
	}
	return probed{inst, drift(ctx, probeTask(j.inst, j.ev, j.prev), probeEnv(inst.Addr, logger, j.prev, o.dir, o.lineage), j.prev)}
}

// Finish keeps what the probe found; nothing waits for it, and nothing is recorded.
func (o *probeOp) Finish(w *walk.Walk, out walk.Outcome) {
	p := out.(probed)
	o.mu.Lock()
	o.found[p.inst.Addr] = p.drift
	o.mu.Unlock()
	w.Update(p.inst.Addr, func(rec *state.Instance) { rec.Status = state.Succeeded })
	w.Release(p.inst.Addr)
}

// StopsOnInterrupt: after Ctrl-C no further probe starts.
func (*probeOp) StopsOnInterrupt() bool { return true }

func (*probeOp) Judge(*walk.Walk, *walk.Result) {}

// noCheckpoints is the probe walk's Checkpointer: a probe records nothing.
type noCheckpoints struct{}

func (noCheckpoints) Commit(uint64, *state.Run, []*state.Instance, map[string][]byte) error {
	return nil
}

// probeWalkOptions are the walk's options: r's parallelism, nothing printed.
func probeWalkOptions(r Refresh) walk.Options {
	return walk.Options{Parallelism: r.Parallelism, Store: noCheckpoints{}, Out: io.Discard}
}
