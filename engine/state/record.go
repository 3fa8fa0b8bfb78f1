package state

import (
	"errors"
	"fmt"
	"time"
)

// Status is the state of a run or of a task instance. The zero Status ("")
// means no status has been recorded; the store writes whatever status the
// engine sets and attaches no meaning to it.
type Status string

// The statuses the engine uses for runs and task instances.
const (
	Pending     Status = "pending"     // not started yet
	Running     Status = "running"     // started and not finished
	Succeeded   Status = "succeeded"   // finished without error
	Failed      Status = "failed"      // finished with an error
	Skipped     Status = "skipped"     // not run; Instance.Reason says why
	Interrupted Status = "interrupted" // stopped by a signal or a crash before finishing
	// Removed is never stored: readers show it for an instance no longer in the flow
	// that the run undid (a record with Removed and Succeeded).
	Removed Status = "removed"
)

// Run is the record of one invocation of a flow (resumes included).
//
// The zero Run is a valid record with no data; CreateRun assigns its ID.
// Times are stored as RFC 3339 with nanoseconds, so a Run read back holds the
// same instants (time.Time.Equal) but no monotonic clock reading.
// A Run is plain data and not safe for concurrent mutation; the store keeps
// no reference to a Run after a call returns.
type Run struct {
	ID   uint64 `json:"id"`
	Flow string `json:"flow"` // the flow's absolute path
	// Dir is the absolute working directory the run's tasks execute in (a resume and
	// a destroy of the run too); empty in records written before flow kept it.
	Dir       string           `json:"dir,omitempty"`
	FlowHash  string           `json:"flow_hash"`
	Vars      map[string]Value `json:"vars,omitempty"`      // sensitive variables are never stored; the engine leaves them out
	Sensitive []string         `json:"sensitive,omitempty"` // names of sensitive variables that were set
	// Defaulted names the variables of Vars that took their declared default: a resume
	// takes the flow's default again, so an edited default applies.
	Defaulted  []string         `json:"defaulted,omitempty"`
	Status     Status           `json:"status"`
	StartedAt  time.Time        `json:"started_at"`
	FinishedAt *time.Time       `json:"finished_at,omitempty"`
	Resumes    int              `json:"resumes,omitempty"`
	PID        int              `json:"pid,omitempty"`
	Outputs    map[string]Value `json:"outputs,omitempty"`
	// SensitiveOutputs names the outputs left out of Outputs because they are secret.
	SensitiveOutputs []string `json:"sensitive_outputs,omitempty"`
	Error            string   `json:"error,omitempty"`
	// Destroys is, for a run of `flow destroy`, the id of the run whose instances it
	// undoes; 0 for a run of the flow itself.
	Destroys uint64 `json:"destroys,omitempty"`
	// Plugins are the plugin executables the run used (engine/ops/plugins.go).
	Plugins []Plugin `json:"plugins,omitempty"`
}

// Instance is the record of one task instance of a run, keyed by its
// Address, which must be non-empty and at most 32 KiB long.
//
// The zero Instance is not storable (it has no address). Like Run, an
// Instance is plain data; the store keeps no reference to it.
type Instance struct {
	Address     string            `json:"address"`
	Type        string            `json:"type"`
	Status      Status            `json:"status"`
	Attempts    int               `json:"attempts"`
	StartedAt   *time.Time        `json:"started_at,omitempty"`
	FinishedAt  *time.Time        `json:"finished_at,omitempty"`
	Error       string            `json:"error,omitempty"`
	Reason      string            `json:"reason,omitempty"` // why skipped, or why re-run
	Outputs     map[string]Value  `json:"outputs,omitempty"`
	Fingerprint string            `json:"fingerprint,omitempty"`
	AttrHashes  map[string]string `json:"attr_hashes,omitempty"`
	Redacted    bool              `json:"redacted,omitempty"` // outputs held a secret and were not stored
	Order       int               `json:"order,omitempty"`    // position in the plan, for listing
	// Plugin is the sha256 of the plugin executable the latest attempt ran with (one of
	// the run's Plugins); empty for a built-in type, and in records written before flow
	// kept it.
	Plugin string `json:"plugin,omitempty"`
	// Inputs are, for a type that can be undone, the inputs its latest attempt started
	// with (recorded, with Dir, before the attempt acts) but those that derive from a
	// secret (named in Withheld): what undoes it — a failed or interrupted attempt's
	// object too — whatever the flow says later.
	Inputs   map[string]Value `json:"inputs,omitempty"`
	Withheld []string         `json:"withheld,omitempty"`
	// Deps are, with Inputs, the instances it waited for: what undoing it once the flow
	// no longer has it must wait for. Nil (not empty) when not recorded: an older flow.
	Deps []string `json:"deps,omitempty"`
	// DepsKnown tells an empty Deps from one not recorded.
	DepsKnown bool `json:"deps_known,omitempty"`
	// Retain is the task's retain_on_destroy.
	Retain bool `json:"retain,omitempty"`
	// Removed marks an instance no longer in the flow that this run undid (succeeded)
	// or failed to undo.
	Removed bool `json:"removed,omitempty"`
	// Dir is the absolute directory the instance acted in (its relative paths are
	// relative to it): where its undo acts. Empty in records written before flow kept it.
	Dir string `json:"dir,omitempty"`
	// Group is the process group of the command the instance was running, while it
	// ran one (0 otherwise), and GroupStart that process's start time in clock ticks
	// since boot (/proc/PID/stat): a resume that finds the same process alive stops it
	// before running the instance again, and never stops a process that merely reuses
	// the number.
	Group      int    `json:"group,omitempty"`
	GroupStart uint64 `json:"group_start,omitempty"`
	// Deposed are objects the instance made earlier whose undo has not succeeded yet,
	// oldest first, as Terraform's deposed objects: an undo before replacing that failed
	// or was cut short leaves the old object here, recorded as it was made (Inputs,
	// Withheld, Outputs, Dir, Fingerprint), until an undo of it succeeds. The next run
	// of the instance undoes them before it acts, a destroy undoes them after the
	// instance's own object, and a run that records the instance anew carries them
	// over. Their own Deposed is always empty.
	Deposed []*Instance `json:"deposed,omitempty"`
	// Holds marks a record that took over what the instance's earlier records held
	// without running it (its objects deposed to be undone before an instance it was
	// built on undid its own): readers take it, not an earlier run's, as the instance's.
	Holds bool `json:"holds,omitempty"`
	// Tries are the attempts before the latest that failed, oldest first: when each
	// started and ended and its error (the latest attempt is StartedAt, FinishedAt and
	// Error). Empty in records written before flow kept them, and for an instance whose
	// first attempt is its latest. The slice is never changed in place: a new attempt's
	// record gets a new one, so shallow copies of a record stay as they were.
	Tries []Try `json:"tries,omitempty"`
}

// Try is a failed attempt of an instance that was tried again.
type Try struct {
	StartedAt  time.Time `json:"started_at"`
	FinishedAt time.Time `json:"finished_at"`
	Error      string    `json:"error,omitempty"`
}

// HasObject reports whether in records an object its undo can act on: the inputs an
// attempt recorded before it acted (for a type that keeps them). False for a record an
// older flow wrote of an attempt that did not succeed, which kept none.
func (in *Instance) HasObject() bool {
	return in != nil && (in.Inputs != nil || len(in.Withheld) > 0)
}

// check reports whether r can be stored.
func (r *Run) check() error {
	if r == nil {
		return errors.New("nil run")
	}
	if err := checkValues("variable", r.Vars); err != nil {
		return err
	}
	if err := checkValues("output", r.Outputs); err != nil {
		return err
	}
	return nil
}

// check reports whether in can be stored.
func (in *Instance) check() error {
	if in == nil {
		return errors.New("nil instance")
	}
	if in.Address == "" {
		return errors.New("instance with empty address")
	}
	if err := checkValues("output", in.Outputs); err != nil {
		return fmt.Errorf("instance %q: %w", in.Address, err)
	}
	if err := checkValues("input", in.Inputs); err != nil {
		return fmt.Errorf("instance %q: %w", in.Address, err)
	}
	for i, d := range in.Deposed {
		if d == nil || len(d.Deposed) > 0 {
			return fmt.Errorf("instance %q: deposed object %d is nil or holds deposed objects", in.Address, i)
		}
		if err := checkValues("input", d.Inputs); err != nil {
			return fmt.Errorf("instance %q: deposed object %d: %w", in.Address, i, err)
		}
	}
	return nil
}
