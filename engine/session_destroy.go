package engine

import (
	"context"
	"time"

	"github.com/flowdev/flow/engine/state"
)

// Destroy undoes what the latest run created (see Runner.Run), or continues the
// destroy that did not finish. The flow is read again from the path the run recorded
// (or req.Flow, where it moved), with its recorded variables under req's, and every
// undo executes in the run's working directory, as Resume does. It refuses with a
// *NoStateError (creating nothing), a *NoRunsError or a *PlaceError, and says with a
// *NothingToDoError that the latest run was a destroy that succeeded. Like Run, the
// error is non-nil when nothing was walked.
func (s *Session) Destroy(ctx context.Context, req Request) (*Outcome, error) {
	req.VarFiles = absolute(req.VarFiles)
	h, _, err := s.hold(&req, nil)
	if err != nil {
		return nil, err
	}
	defer h.close()
	latest := h.latest
	if latest == nil {
		return nil, &NoRunsError{Path: s.path, Op: "destroy"}
	}
	target, run := latest, (*state.Run)(nil)
	if latest.Destroys != 0 {
		if latest.Status == state.Succeeded {
			return nil, &NothingToDoError{Latest: latest, Op: "destroy"}
		}
		if target, err = h.store.GetRun(latest.Destroys); err != nil {
			return nil, err
		}
		run = latest
	}
	placed := target
	if run != nil {
		placed = run
	}
	p, err := placeOf(placed, req.Flow)
	if err != nil {
		return nil, err
	}
	if err := p.enter(); err != nil {
		return nil, err
	}
	created, base, err := runInputs(h.store, target)
	if err != nil {
		return nil, err
	}
	l, err := s.load(&req, p.flow, base, false)
	if err != nil {
		return nil, err
	}
	start := Start{Kind: NewDestroy, From: target.ID, FlowChanged: l.Flow.Hash != target.FlowHash}
	var done map[string]*state.Instance
	if run == nil {
		run, err = startDestroy(h.store, target, l, p)
	} else {
		start.Kind = ResumedDestroy
		if done, _, err = runInputs(h.store, run); err == nil {
			_, err = resumeRun(h.store, run, l, p)
		}
	}
	if err != nil {
		return nil, err
	}
	start.Run = run
	finish := func(res *Result) *state.Run {
		run.Status, run.FinishedAt = res.Status, timePtr(time.Now())
		return run
	}
	d := NewRunner(l.Plan, Options{Undo: created, Previous: done, RunID: run.ID, Store: h.store,
		Parallelism: req.Parallelism, TransientRetry: req.TransientRetry, Out: req.Out,
		Logger: req.logger(l.Plan.Scope.Redact), Live: req.Live, Finish: finish})
	start.Instances = len(d.order)
	if req.Observer != nil {
		req.Observer.Started(start, d)
	}
	res, runErr := d.Run(ctx)
	if runErr != nil { // the last checkpoint, and the record with it, failed: try once more
		_ = finishDestroy(h.store, run, res, runErr) // runErr already says the state could not be written
	}
	return &Outcome{Run: run, Result: res, Loaded: l, Walker: d, Err: runErr}, nil
}
