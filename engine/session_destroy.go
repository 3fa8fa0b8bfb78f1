package engine

import (
	"context"
	"sort"

	"github.com/zclconf/go-cty/cty"

	"github.com/flowdev/flow/engine/ops"
	"github.com/flowdev/flow/engine/state"
)

// Destroy undoes what the latest run created (see Runner.Run), or continues the
// destroy that did not finish. The flow is read again from the path the run recorded
// (or req.Flow, where it moved), with its recorded variables under req's, and every
// undo acts in the run's working directory, as Resume's tasks do. Before anything is
// undone, req.Confirm (when set) is shown what the destroy will do, with the state
// file held, and a false answer ends it with a *DeclinedError. It refuses with a
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
	j, err := s.prepareDestroy(h.store, h.latest, &req)
	if err != nil {
		return nil, err
	}
	if diags := ops.DestroyPluginChanges(j.target, j.loaded, j.created); len(diags) > 0 && req.Warn != nil {
		req.Warn(j.loaded.Flow, diags)
	}
	if req.Confirm != nil && j.preview.Destroys() > 0 && !req.Confirm(j.preview) {
		return nil, &DeclinedError{}
	}
	l, run := j.loaded, j.run
	start := Start{Kind: NewDestroy, From: j.target.ID, FlowChanged: l.Flow.Hash != j.target.FlowHash}
	if run == nil {
		run, err = ops.StartDestroy(h.store, j.target, l, j.place.flow, j.place.dir)
	} else {
		start.Kind = ResumedDestroy
		_, err = ops.ResumeRun(h.store, run, l, j.place.flow, j.place.dir)
	}
	if err != nil {
		return nil, err
	}
	start.Run = run
	finish := func(res *Result) *state.Run { return ops.DestroyResult(run, res) }
	opts := req.options(run, h.store, l.Plan.Scope.Redact)
	opts.Previous, opts.Finish = j.done, finish
	d := NewDestroyer(l.Plan, j.created, opts)
	start.Instances = len(d.Snapshot())
	h.started(&req, start, d)
	defer h.giveUpOnInterrupt(ctx)()
	live, err := ops.LiveInstances(h.store)
	if err != nil {
		return nil, err
	}
	removed, failed, err := ops.OrphanPass(ctx, h.store, run, live, j.walked, s.reg, l.Plan.Scope, req.options(run, h.store, l.Plan.Scope.Redact))
	if err != nil || failed != nil {
		return &Outcome{Run: run, Result: failed, Loaded: l, Walker: d, Err: err}, nil
	}
	res, runErr := d.Run(ctx)
	res.Removed = removed
	if runErr != nil { // the last checkpoint, and the record with it, failed: try once more
		_ = ops.FinishDestroy(h.store, run, res, runErr) // runErr already says the state could not be written
	}
	return &Outcome{Run: run, Result: res, Loaded: l, Walker: d, Err: runErr}, nil
}

// PreviewDestroy says what Destroy would do with each instance, reading the state
// file only: a *BusyError while a running flow holds it, a *NoStateError when there
// is none, and Destroy's refusals otherwise.
func (s *Session) PreviewDestroy(req Request) (*DestroyPreview, error) {
	store, err := s.openRead()
	if err != nil {
		return nil, err
	}
	defer store.Close()
	latest, err := store.LatestRun()
	if err != nil {
		return nil, err
	}
	j, err := s.prepareDestroy(store, latest, &req)
	if err != nil {
		return nil, err
	}
	return j.preview, nil
}

// destroyJob is what a destroy undoes, where, and how it previews.
type destroyJob struct {
	target  *state.Run // the run undone
	run     *state.Run // the unfinished destroy run continued, or nil
	place   place
	loaded  *Loaded
	created map[string]*state.Instance // target's records
	done    map[string]*state.Instance // run's records, from an earlier attempt
	preview *DestroyPreview
}

// prepareDestroy picks what a destroy of latest undoes, finds its place and loads its
// flow with the recorded variables.
func (s *Session) prepareDestroy(store *state.Store, latest *state.Run, req *Request) (*destroyJob, error) {
	if latest == nil {
		return nil, &NoRunsError{Path: s.path, Op: "destroy"}
	}
	j := &destroyJob{target: latest}
	if latest.Destroys != 0 {
		if latest.Status == state.Succeeded {
			return nil, &NothingToDoError{Latest: latest, Op: "destroy"}
		}
		var err error
		if j.target, err = store.GetRun(latest.Destroys); err != nil {
			return nil, err
		}
		j.run = latest
	}
	placed := j.target
	if j.run != nil {
		placed = j.run
	}
	var err error
	if j.place, err = placeOf(placed, req.Flow); err != nil {
		return nil, err
	}
	created, base, err := ops.RunInputs(store, j.target)
	if err != nil {
		return nil, err
	}
	if j.run != nil {
		if j.done, _, err = ops.RunInputs(store, j.run); err != nil {
			return nil, err
		}
	}
	if j.loaded, err = s.load(req, j.place.flow, j.place.dir, base, false); err != nil {
		return nil, err
	}
	j.created = created
	if err := unrecordedMoved(j.loaded, created, base); err != nil {
		return nil, err
	}
	j.preview = &DestroyPreview{Target: j.target, Continues: j.run, Flow: j.place.flow, Dir: j.place.dir,
		Decisions: ops.DestroyDecisions(j.loaded.Plan, created, j.done)}
	live, err := ops.LiveInstances(store)
	if err != nil {
		return nil, err
	}
	j.preview.Decisions = append(ops.OrphanDecisions(s.reg, live, j.walked, false), j.preview.Decisions...)
	return j, nil
}

// walked reports whether the destroy's walk visits addr: the flow has it and the
// target run started it. The others the state holds are orphans.
func (j *destroyJob) walked(addr string) bool {
	return j.loaded.Plan.Instances[addr] != nil && ops.HoldsObjects(j.created[addr])
}

// unrecordedMoved refuses a destroy whose variables differ from the run's while an
// instance it undoes was recorded by an older flow without its object: that one is
// undone from the flow, so other values would point its undo at what the run did not
// make.
func unrecordedMoved(l *Loaded, created map[string]*state.Instance, recorded map[string]cty.Value) error {
	addrs := ops.Unrecorded(l.Plan, created)
	if len(addrs) == 0 {
		return nil
	}
	var changed []string
	for name, was := range recorded {
		now, ok := l.Plan.Scope.Vars[name]
		if !ok {
			continue
		}
		now, _ = now.UnmarkDeep()
		if eq := now.Equals(was); !eq.IsKnown() || eq.False() {
			changed = append(changed, name)
		}
	}
	if len(changed) == 0 {
		return nil
	}
	sort.Strings(changed)
	return &UnrecordedError{Addrs: addrs, Vars: changed}
}
