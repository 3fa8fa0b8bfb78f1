package ops

import (
	"fmt"

	"github.com/flowdev/flow/engine/state"
)

// The run records as readers (flow runs, status, logs, ui) are shown them, read from a
// store by the process that holds it, or by one that could open it.

// NoRunsError refuses a resume or a destroy of a state file that holds no run; a read
// of a run (ReadStatus, ReadLog) of one is one too.
type NoRunsError struct {
	Path string
	Op   string // "resume" or "destroy"
}

func (e *NoRunsError) Error() string {
	return fmt.Sprintf("nothing to %s in %s: there are no runs", e.Op, e.Path)
}

// EffectiveStatus reports a run left running by a process that is gone as
// interrupted. Only call it while holding the state file, or the process may be alive.
func EffectiveStatus(r *state.Run) state.Status {
	if r.Status == state.Running {
		return state.Interrupted
	}
	return r.Status
}

// ReadRuns reads every run of store; one that shows as running is interrupted (its
// process is gone: the file could be opened) unless it is own, the run of the process
// that reads, or the latest of a PostgreSQL state a writer holds.
func ReadRuns(store *state.Store, own uint64) ([]*state.Run, error) {
	runs, err := store.Runs()
	live := store.WriterActive()
	for i, r := range runs {
		if r.ID != own && (!live || i != len(runs)-1) {
			r.Status = EffectiveStatus(r)
		}
	}
	return runs, err
}

// ReadStatus reads run runID (the latest with 0) of store; holding says that this
// process holds store for writing, so that its latest run, if running, really runs.
func ReadStatus(store *state.Store, runID uint64, holding bool) (*state.Run, []state.Instance, error) {
	run, err := pickRun(store, runID)
	if err != nil {
		return nil, nil, err
	}
	recs, err := store.Instances(run.ID)
	if err != nil {
		return nil, nil, err
	}
	// A writer of a PostgreSQL state may hold it while we read: its latest run is
	// then really running (as far as it has committed).
	if latest, _ := store.LatestRun(); latest != nil && latest.ID == run.ID && (holding || store.WriterActive()) {
		flat := make([]state.Instance, len(recs))
		for i, r := range recs {
			flat[i] = *r
		}
		return run, flat, nil
	}
	flat := make([]state.Instance, len(recs))
	for i, r := range recs {
		flat[i] = *r
		if run.Status == state.Running && r.Status == state.Running {
			flat[i].Status = state.Interrupted // its process is gone: we could open the file
		}
		if r.Removed && r.Status == state.Succeeded {
			flat[i].Status = state.Removed // undone: no longer in the flow
		}
	}
	run.Status = EffectiveStatus(run)
	return run, flat, nil
}

// ReadLog returns what addr wrote in run runID (the latest with 0) of store.
func ReadLog(store *state.Store, runID uint64, addr string) ([]byte, error) {
	run, err := pickRun(store, runID)
	if err != nil {
		return nil, err
	}
	recs, err := store.Instances(run.ID)
	if err != nil {
		return nil, err
	}
	for _, r := range recs {
		if r.Address == addr {
			return store.Logs(run.ID, addr)
		}
	}
	return nil, fmt.Errorf("run %d has no task instance %s", run.ID, addr)
}

func pickRun(store *state.Store, id uint64) (*state.Run, error) {
	if id != 0 {
		return store.GetRun(id)
	}
	r, err := store.LatestRun()
	if err == nil && r == nil {
		err = &NoRunsError{Path: store.Path()}
	}
	return r, err
}
