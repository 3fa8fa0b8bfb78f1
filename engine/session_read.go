package engine

import (
	"context"
	"errors"
	"io/fs"
	"time"

	"github.com/zclconf/go-cty/cty"

	"github.com/flowdev/flow/engine/live"
	"github.com/flowdev/flow/engine/ops"
	"github.com/flowdev/flow/engine/state"
)

// Preview is what a run of a flow would do, as `flow plan` shows it.
type Preview struct {
	// From is the run whose records the preview starts from: an unfinished run of the
	// same flow, or with targets or replacements its latest run; nil for a new run.
	From *RunRecord
	// Resumes says the preview is of a resume of From: it did not finish, so a run
	// refuses, and "flow resume" does what the preview shows.
	Resumes bool
	// Last, for a new run, is the flow's latest run (succeeded, or a destroy), which
	// the reasons name; nil when the flow never ran on the state file.
	Last *RunRecord
	// Refused says a run refuses without --new: Last is a destroy that did not finish
	// (flow destroy finishes it); the preview shows what --new would do.
	Refused bool
	// Elsewhere is, for a new run, what the state holds made in other directories: a
	// run refuses (an *ElsewhereError) unless req.Move, and with it takes them over.
	Elsewhere *ElsewhereError
	Plan      *Plan // the part of the flow the targets select
	Decisions []Decision
	// Removed is what the run does first with the instances the state holds and the
	// flow no longer has: destroy, or keep (left as they are).
	Removed []Decision
}

// Preview says what a run of req.Flow would do with each instance: resuming the
// latest run of that flow when it did not finish (or, with targets or replacements,
// starting from its records), else a new run. It never creates the state file, and
// refuses with a *BusyError while a running flow holds it and with an *OtherFlowError
// as Run does.
func (s *Session) Preview(ctx context.Context, req Request) (*Preview, error) {
	hist, err := s.historyOf(&req)
	if err != nil {
		return nil, err
	}
	l, plan, err := s.loadSelected(&req, req.Flow, "", hist.base)
	if err != nil {
		return nil, err
	}
	if hist.resumes && hist.from != nil && req.Warn != nil {
		if diags := ops.PluginChanges(hist.from, l, hist.previous); len(diags) > 0 {
			req.Warn(l.Flow, diags)
		}
	}
	from := hist.from
	spec := ops.Spec{Previous: hist.previous, Replace: req.Replace}
	if from != nil {
		spec.From = from.ID
	}
	var refresh *ops.Refresh
	if !req.NoRefresh {
		refresh = req.refresh(hist.lineage)
	}
	pv := &Preview{From: from, Resumes: hist.resumes, Last: hist.last, Refused: hist.refused && !hist.resumes, Plan: plan}
	if pv.Decisions, err = ops.Preview(ctx, plan, spec, refresh); err != nil {
		return nil, err
	}
	if hist.last != nil {
		ops.AgainReasons(pv.Decisions, hist.last, hist.lastRecs)
	}
	// One read of the state for what it holds live: pending undos, the place, orphans.
	var live map[string]ops.Orphan
	store, err := s.openRead()
	switch {
	case errors.As(err, new(*NoStateError)): // nothing made yet
	case err != nil:
		return nil, err
	default:
		defer store.Close()
		if live, err = ops.LiveInstances(store); err != nil {
			return nil, err
		}
		if !hist.resumes {
			if pv.Elsewhere, err = s.madeElsewhere(store, live); err != nil {
				return nil, err
			}
		}
	}
	ops.NotePending(pv.Decisions, plan, live)
	if !req.selective() {
		inFlow := func(addr string) bool { return l.Plan.Instances[addr] != nil }
		pv.Removed = ops.OrphanDecisions(s.reg, live, inFlow, req.KeepRemoved)
	}
	return pv, nil
}

// liveInstances reads what earlier runs made and no run undid (ops.LiveInstances):
// none when there is no state yet.
func (s *Session) liveInstances() (map[string]ops.Orphan, error) {
	store, err := s.openRead()
	if errors.As(err, new(*NoStateError)) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer store.Close()
	return ops.LiveInstances(store)
}

// history is what a preview starts from: the run a resume (or a targeted run)
// builds on, with its records and variables; else, for a new run, the latest run
// of the flow and its records, named in the reasons.
type history struct {
	from     *state.Run
	resumes  bool
	previous map[string]*state.Instance
	base     map[string]cty.Value
	last     *state.Run
	lastRecs map[string]*state.Instance
	refused  bool // a run refuses without --new (basis.refused)
	lineage  string
}

// historyOf reads what a run of req.Flow would build on: the latest run of that flow
// if it is unfinished or, with targets or replacements, whatever its status.
func (s *Session) historyOf(req *Request) (*history, error) {
	h := &history{}
	store, err := s.openRead()
	if errors.As(err, new(*NoStateError)) {
		return h, nil
	}
	if err != nil {
		return nil, err
	}
	defer store.Close()
	id, _ := store.Identity() // none: names derived from it are still unique per address
	h.lineage = id.Lineage
	run, err := store.LatestRun()
	if err != nil {
		return nil, err
	}
	b, err := s.basisOf(run, req)
	if err != nil || (b.from == nil && b.last == nil) {
		return h, err
	}
	recs, base, err := ops.RunInputs(store, run)
	if err != nil {
		return nil, err
	}
	h.refused = b.refused
	switch b.kind {
	case startNew:
		h.last, h.lastRecs = run, recs
	case startFromCheckpoints: // from the flow's values
		h.from, h.previous = run, recs
	case startResume:
		h.from, h.previous, h.base, h.resumes = run, recs, ops.Given(run, base), true
	}
	return h, nil
}

// openRead opens the state file for reading: a *BusyError while a run holds it, a
// *NoStateError when it does not exist.
func (s *Session) openRead() (*state.Store, error) {
	store, err := state.Open(s.file, state.Options{ReadOnly: true, LockTimeout: 300 * time.Millisecond})
	var locked *state.LockedError
	switch {
	case errors.As(err, &locked):
		return nil, &BusyError{Path: s.path}
	case err != nil && errors.Is(err, fs.ErrNotExist):
		return nil, &NoStateError{Path: s.path}
	}
	return store, err
}

// Runs returns every run recorded, oldest first; a run whose process is gone without
// finishing shows as interrupted. While a flow process holds the file, it answers.
func (s *Session) Runs() ([]*RunRecord, error) {
	var runs []*RunRecord
	err := s.read(func() error { runs = nil; return live.Runs(s.file, &runs) },
		func(store *state.Store) (err error) { runs, err = ops.ReadRuns(store, 0); return err })
	return runs, err
}

// Status returns run runID (the latest with 0) and its instance records. A run whose
// process is gone without finishing shows as interrupted, and so do the instances it
// left running. A state file with no run yet is a *NoRunsError. While a flow process
// holds the file, it answers: its own run is then running, with the records it has so
// far (before its walk starts, those the file has).
func (s *Session) Status(runID uint64) (*RunRecord, []InstanceRecord, error) {
	var run *RunRecord
	var recs []InstanceRecord
	err := s.read(func() error {
		var st liveStatus
		if err := s.askStatus(runID, &st); err != nil {
			return err
		}
		run, recs = st.Run, st.Instances
		return nil
	}, func(store *state.Store) (err error) { run, recs, err = ops.ReadStatus(store, runID, false); return err })
	return run, recs, err
}

// Log returns what addr wrote in run runID (the latest with 0). While a flow process
// holds the file, it answers: for its own run, what it captured so far.
func (s *Session) Log(runID uint64, addr string) ([]byte, error) {
	var out []byte
	err := s.read(func() (err error) { out, err = live.Log(s.file, runID, addr); return err },
		func(store *state.Store) (err error) { out, err = ops.ReadLog(store, runID, addr); return err })
	return out, err
}

// PendingUndos names, sorted, every instance the state holds with old objects still to
// be undone (deposed: an undo before replacing that failed or was cut short), with how
// many. While a flow process holds a state file it is a *BusyError.
func (s *Session) PendingUndos() (map[string]int, error) {
	live, err := s.liveInstances()
	if err != nil {
		return nil, err
	}
	out := map[string]int{}
	for addr, o := range live {
		if n := len(o.Rec.Deposed); n > 0 {
			out[addr] = n
		}
	}
	return out, nil
}
