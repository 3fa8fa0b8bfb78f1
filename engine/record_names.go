package engine

import "github.com/flowdev/flow/engine/state"

// The records a session reads and writes, as the state file keeps them. They are
// engine's vocabulary too: callers name them here, not in engine/state.
type (
	// RunRecord is one run of a flow, or of flow destroy.
	RunRecord = state.Run
	// InstanceRecord is one task instance of a run.
	InstanceRecord = state.Instance
	// Status is a run's or an instance's status.
	Status = state.Status
	// StoredValue is a value as the state file keeps it (cty's JSON encoding).
	StoredValue = state.Value
)

// The statuses of runs and instances.
const (
	Pending     = state.Pending
	Running     = state.Running
	Succeeded   = state.Succeeded
	Failed      = state.Failed
	Skipped     = state.Skipped
	Interrupted = state.Interrupted
	// Removed is how readers show an instance no longer in the flow that its run undid.
	Removed = state.Removed
)

// settled reports whether latest lets a new run start without --new: it succeeded,
// or it is a targeted run whose targets succeeded and that left the rest pending.
// Like Terraform's -target, such a run does not hold up the next full one; "flow
// resume" still continues it while it is the latest.
func settled(latest *state.Run) bool {
	return latest.Status == state.Succeeded || latest.Status == state.Pending && latest.Destroys == 0
}
