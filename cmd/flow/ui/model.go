package ui

import "time"

// Run is one run as the page lists it.
type Run struct {
	ID         uint64     `json:"id"`
	Flow       string     `json:"flow"`
	Kind       string     `json:"kind"` // "run" or "destroy"
	Status     string     `json:"status"`
	StartedAt  time.Time  `json:"started_at"`
	FinishedAt *time.Time `json:"finished_at,omitempty"`
	Resumes    int        `json:"resumes"`
	Destroys   uint64     `json:"destroys,omitempty"` // for a destroy, the run it undoes
	Error      string     `json:"error,omitempty"`
}

// Instance is one task instance of a run: what the graph, the timeline and a node's
// details show. It has no outputs or inputs, so no secret value can be in it.
type Instance struct {
	Address     string     `json:"address"`
	Type        string     `json:"type"`
	Status      string     `json:"status"`
	Attempts    int        `json:"attempts"`
	StartedAt   *time.Time `json:"started_at,omitempty"`
	FinishedAt  *time.Time `json:"finished_at,omitempty"`
	Error       string     `json:"error,omitempty"`
	Reason      string     `json:"reason,omitempty"`
	Fingerprint string     `json:"fingerprint,omitempty"`
	// Deps are the instances it waited for, as recorded with the run; DepsKnown tells
	// an empty Deps from one an older flow did not record.
	Deps      []string `json:"deps,omitempty"`
	DepsKnown bool     `json:"deps_known,omitempty"`
	Order     int      `json:"order"`
	Removed   bool     `json:"removed,omitempty"`
	// Tries are the failed attempts before the latest (StartedAt..FinishedAt), oldest
	// first; empty for a record an older flow wrote.
	Tries []Try `json:"tries,omitempty"`
	// PendingUndo counts the objects it made before whose undo has not succeeded yet
	// (docs/checkpoints.md: pending undos).
	PendingUndo int `json:"pending_undo,omitempty"`
}

// Try is a failed attempt that was tried again.
type Try struct {
	StartedAt  time.Time `json:"started_at"`
	FinishedAt time.Time `json:"finished_at"`
	Error      string    `json:"error,omitempty"`
}

// Detail is a run with every instance record, in plan order.
type Detail struct {
	Run       Run        `json:"run"`
	Instances []Instance `json:"instances"`
	// Live is set while the run is in progress in the process that answered.
	Live bool `json:"live"`
}

// Source reads the records the page shows. Its methods are called from server
// goroutines, concurrently.
type Source interface {
	// Runs is every run recorded, oldest first.
	Runs() ([]Run, error)
	// Detail is run id (0: the latest) with its instances.
	Detail(id uint64) (*Detail, error)
	// Log is what addr wrote in run id (0: the latest); for a run in progress, what
	// it captured so far.
	Log(id uint64, addr string) ([]byte, error)
}

// same reports whether a and b would look the same on the page.
func same(a, b *Instance) bool {
	return a.Status == b.Status && a.Attempts == b.Attempts && timeEq(a.StartedAt, b.StartedAt) &&
		timeEq(a.FinishedAt, b.FinishedAt) && a.Error == b.Error && a.Reason == b.Reason &&
		a.Fingerprint == b.Fingerprint && len(a.Deps) == len(b.Deps) && len(a.Tries) == len(b.Tries) &&
		a.PendingUndo == b.PendingUndo
}

func timeEq(a, b *time.Time) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Equal(*b)
}
