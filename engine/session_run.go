package engine

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/zclconf/go-cty/cty"

	"github.com/flowdev/flow/engine/ops"
	"github.com/flowdev/flow/engine/state"
)

// Run starts a new run of req.Flow. It refuses with an *OtherFlowError when the state
// file holds another flow's instances, and with an *UnfinishedError while the latest
// run did not finish (unless req.New; never while a destroy did not finish).
// With targets or replacements it starts from the records of the latest run of the
// same flow, so what succeeded there stands. The error is non-nil when nothing ran:
// the flow does not load, the request was refused, or the state file could not be
// opened or written; how the walk ended is in the Outcome.
func (s *Session) Run(ctx context.Context, req Request) (*Outcome, error) {
	var l *Loaded
	var plan *Plan
	first := func() (*state.Run, error) {
		var err error
		if l, plan, err = s.loadSelected(&req, req.Flow, "", nil); err != nil {
			return nil, err
		}
		return ops.NewRunRecord(l)
	}
	h, created, err := s.hold(&req, first)
	if err != nil {
		return nil, err
	}
	defer h.close()
	if created != nil {
		return s.walkRun(ctx, &req, h, Start{Kind: NewRun, Run: created}, l, plan, nil)
	}
	latest := h.latest
	b, err := s.basisOf(latest, &req)
	if err != nil {
		return nil, err
	}
	if b.refused {
		return nil, &UnfinishedError{Latest: latest, Status: ops.EffectiveStatus(latest)}
	}
	live, err := ops.LiveInstances(h.store)
	if err != nil {
		return nil, err
	}
	away, err := s.madeElsewhere(h.store, live)
	if err != nil {
		return nil, err
	}
	if away != nil && !req.Move {
		return nil, away
	}
	if away != nil {
		// As Terraform prints what it will do before it does it: what the move takes over.
		fmt.Fprintf(req.Out, "Taking over %d instances made in %s (--move: the project and its files moved here): every undo of what they made acts here, in %s, from now on.\n",
			away.Count, strings.Join(away.Dirs, ", "), away.Here)
	}
	if latest != nil && latest.Destroys != 0 && latest.Status != state.Succeeded {
		fmt.Fprintf(req.Out, "The latest run (%d) destroys run %d and did not finish: what it did not undo stays recorded, and this run makes the flow's instances again (flow destroy undoes them all).\n", latest.ID, latest.Destroys)
	}
	if l == nil {
		if l, plan, err = s.loadSelected(&req, req.Flow, "", nil); err != nil {
			return nil, err
		}
	}
	start := Start{Kind: NewRun}
	if b.kind == startFromCheckpoints {
		start.Kind, start.From = FromCheckpoints, b.from.ID
	}
	run, previous, err := ops.StartRun(h.store, l, b.from)
	if err != nil {
		return nil, err
	}
	start.Run = run
	return s.walkRun(ctx, &req, h, start, l, plan, previous)
}

// Resume continues the latest run: the flow is read again from the path it recorded
// (or req.Flow, where it moved), with its recorded variables under req's, and what
// succeeded with the same inputs stands. Its tasks act in the run's working directory
// (relative paths in req are taken from the caller's). It refuses with a *NoStateError (and creates no file), a *NoRunsError, a
// *PlaceError (the flow or the directory is gone) or an *UnfinishedError (a destroy
// that did not finish), and says with a *NothingToDoError that the latest run
// succeeded (and req selects nothing) or was a destroy.
func (s *Session) Resume(ctx context.Context, req Request) (*Outcome, error) {
	req.VarFiles = absolute(req.VarFiles)
	h, _, err := s.hold(&req, nil)
	if err != nil {
		return nil, err
	}
	defer h.close()
	latest := h.latest
	switch {
	case latest == nil:
		return nil, &NoRunsError{Path: s.path, Op: "resume"}
	case latest.Destroys != 0 && latest.Status != state.Succeeded:
		return nil, &UnfinishedError{Latest: latest, Status: ops.EffectiveStatus(latest)}
	case latest.Destroys != 0:
		return nil, &NothingToDoError{Latest: latest, Op: "resume"}
	case latest.Status == state.Succeeded && !req.selective():
		return nil, &NothingToDoError{Latest: latest, Op: "resume", Drifted: s.drifted(ctx, h.store, latest, req)}
	}
	p, err := placeOf(latest, req.Flow)
	if err != nil {
		return nil, err
	}
	previous, base, err := ops.RunInputs(h.store, latest)
	if err != nil {
		return nil, err
	}
	l, plan, err := s.loadSelected(&req, p.flow, p.dir, ops.Given(latest, base))
	if err != nil {
		return nil, err
	}
	if diags := ops.PluginChanges(latest, l, previous); len(diags) > 0 && req.Warn != nil {
		req.Warn(l.Flow, diags)
	}
	changed, err := ops.ResumeRun(h.store, latest, l, p.flow, p.dir)
	if err != nil {
		return nil, err
	}
	start := Start{Kind: ResumedRun, Run: latest, FlowChanged: changed}
	return s.walkRun(ctx, &req, h, start, l, plan, previous)
}

// drifted is what a resume of run, which succeeded, tells the user a new run would
// repair: the instances whose object refresh found changed (see ops.Drifted). nil
// when the flow cannot be read or refresh is off.
func (s *Session) drifted(ctx context.Context, store *state.Store, run *state.Run, req Request) []Decision {
	if req.NoRefresh {
		return nil
	}
	p, err := placeOf(run, req.Flow)
	if err != nil {
		return nil
	}
	recs, base, err := ops.RunInputs(store, run)
	if err != nil {
		return nil
	}
	l, err := s.load(&req, p.flow, p.dir, ops.Given(run, base), false)
	if err != nil {
		return nil
	}
	ds, _ := ops.Drifted(ctx, l.Plan, ops.Spec{Previous: recs, From: run.ID, Dir: p.dir}, *req.refresh(lineageOf(store)))
	return ds
}

// loadSelected loads the flow at path, acting in dir, and selects what req's targets name.
func (s *Session) loadSelected(req *Request, path, dir string, base map[string]cty.Value) (*Loaded, *Plan, error) {
	l, err := s.load(req, path, dir, base, false)
	if err != nil {
		return nil, nil, err
	}
	plan, err := selected(l, req)
	if err != nil {
		return nil, nil, err
	}
	return l, plan, nil
}

// walkRun executes plan (all of l's plan, or the part req's targets select) as start's
// run, and records how it ended: a run of the whole flow with its last checkpoint, a
// targeted one afterwards, since it may leave the run unfinished.
func (s *Session) walkRun(ctx context.Context, req *Request, h *held, start Start, l *Loaded, plan *Plan, previous map[string]*state.Instance) (*Outcome, error) {
	defer h.giveUpOnInterrupt(ctx)()
	run := start.Run
	var finish func(*Result) *state.Run
	whole := len(plan.Order) == len(l.Plan.Order)
	if whole {
		finish = func(res *Result) *state.Run { return ops.RecordResult(run, res) }
	}
	live, err := ops.LiveInstances(h.store) // read once: what earlier runs made, and what the flow dropped
	if err != nil {
		return nil, err
	}
	made := ops.MadeRecords(live)
	opts := req.options(run, h.store, plan.Scope.Redact)
	opts.Made, opts.Previous, opts.Finish = made, previous, finish
	runner := NewRunner(plan, opts)
	start.Instances = len(plan.Order)
	h.started(req, start, runner)
	removed := 0
	if req.KeepRemoved {
		ops.SayKept(h.store, l.Plan, req.Out)
	} else if !req.selective() {
		inFlow := func(addr string) bool { return l.Plan.Instances[addr] != nil }
		var failed *Result
		var err error
		orphanOpts := req.options(run, h.store, l.Plan.Scope.Redact)
		if removed, failed, err = ops.OrphanPass(ctx, h.store, run, live, inFlow, s.reg, l.Plan.Scope, orphanOpts); err != nil || failed != nil {
			return &Outcome{Run: run, Result: failed, Loaded: l, Walker: runner, Err: err}, nil
		}
	}
	res, runErr := runner.Run(ctx)
	res.Removed = removed
	if !whole || runErr != nil { // a targeted run, or the last checkpoint (and the record with it) failed
		if err := ops.FinishRun(h.store, run, res, runErr, l.Plan); err != nil && runErr == nil {
			runErr = err
		}
	}
	return &Outcome{Run: run, Result: res, Loaded: l, Walker: runner, Err: runErr}, nil
}

func absPath(p string) string {
	if abs, err := filepath.Abs(p); err == nil {
		return abs
	}
	return p
}

// sameFlow refuses a run of flow on a state file whose latest run is of another flow,
// unless that flow's instances were all destroyed (the latest run is a destroy that
// succeeded).
func (s *Session) sameFlow(latest *state.Run, flow string) error {
	if latest == nil || latest.Flow == absPath(flow) || (latest.Destroys != 0 && latest.Status == state.Succeeded) {
		return nil
	}
	return &OtherFlowError{Path: s.path, Flow: absPath(flow), Holds: latest.Flow, Run: latest.ID}
}
