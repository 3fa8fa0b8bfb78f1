package engine

import (
	"fmt"
	"strings"

	"github.com/hashicorp/hcl/v2"

	"github.com/flowdev/flow/engine/config"
	"github.com/flowdev/flow/engine/ops"
)

// NoRunsError refuses a resume or a destroy of a state file that holds no run, and
// is what reading the runs of one finds (see ops.NoRunsError).
type NoRunsError = ops.NoRunsError

// FlowError is a flow that does not load: its diagnostics, and the flow (for its
// sources) when its files parsed.
type FlowError struct {
	Flow  *config.Flow
	Diags hcl.Diagnostics
}

func (e *FlowError) Error() string { return "the flow is invalid: " + e.Diags.Error() }

// UnfinishedError refuses a new run, or a resume, while the latest run did not
// finish: Latest is that run, with its effective status.
type UnfinishedError struct {
	Latest *RunRecord
	Status Status
}

func (e *UnfinishedError) Error() string {
	return fmt.Sprintf("the latest run (%d) did not finish: it is %s", e.Latest.ID, e.Status)
}

// NothingToDoError says a resume or a destroy has nothing to do: the latest run
// succeeded (Latest), destroyed an earlier run, or was destroyed. It is no failure.
type NothingToDoError struct {
	Latest *RunRecord
	Op     string // "resume" or "destroy"
	// Drifted, for a resume of a run that succeeded, are the instances whose refresh
	// found their object changed since: a new run makes them again.
	Drifted []Decision
}

func (e *NothingToDoError) Error() string {
	return fmt.Sprintf("nothing to %s: the latest run (%d) is %s", e.Op, e.Latest.ID, e.Latest.Status)
}

// BusyError is a state file a running flow holds, which only reads were asked of.
type BusyError struct{ Path string }

func (e *BusyError) Error() string { return e.Path + " is in use by a running flow" }

// NoStateError is a state file that does not exist: nothing has run here yet.
type NoStateError struct{ Path string }

func (e *NoStateError) Error() string {
	return fmt.Sprintf("no state file at %s: nothing has run here yet", e.Path)
}

// PlaceError refuses a resume or a destroy of run Run because its flow (Flow) or its
// working directory (Dir) is gone. Moved says the flow's place was given (--flow).
type PlaceError struct {
	Run   uint64
	Flow  string
	Dir   string
	Moved bool
	Err   error
}

func (e *PlaceError) Error() string {
	if e.Dir != "" {
		return fmt.Sprintf("the working directory of run %d, %s, is gone", e.Run, e.Dir)
	}
	if e.Moved {
		return fmt.Sprintf("the flow %s cannot be read: %v", e.Flow, e.Err)
	}
	return fmt.Sprintf("the flow of run %d, %s, is gone: %v", e.Run, e.Flow, e.Err)
}

func (e *PlaceError) Unwrap() error { return e.Err }

// DeclinedError is a destroy the request's Confirm declined: nothing was undone.
type DeclinedError struct{}

func (e *DeclinedError) Error() string { return "destroy cancelled: nothing was destroyed" }

// OtherFlowError refuses a run of Flow on a state file that holds another flow's
// instances: Holds, run Run's flow. A state file belongs to one flow.
type OtherFlowError struct {
	Path  string
	Flow  string
	Holds string
	Run   uint64
}

func (e *OtherFlowError) Error() string {
	return fmt.Sprintf("the state file %s belongs to the flow %s (run %d), not %s", e.Path, e.Holds, e.Run, e.Flow)
}

// ElsewhereError refuses a new run in Here while the state holds Count instances made
// in Dirs, other directories: the run would make them again here and lose track of
// them there. One state, one place; Request.Move takes them along instead.
type ElsewhereError struct {
	Path  string
	Here  string
	Dirs  []string
	Count int
}

func (e *ElsewhereError) Error() string {
	return fmt.Sprintf("the state file %s holds %d instances made in %s, not in %s", e.Path, e.Count, strings.Join(e.Dirs, ", "), e.Here)
}

// UnrecordedError refuses a destroy with variables other than the run's (Vars) while
// instances it undoes (Addrs) were recorded by an older flow without their objects:
// they are undone from the flow, which those values would point elsewhere.
type UnrecordedError struct {
	Addrs, Vars []string
}

func (e *UnrecordedError) Error() string {
	return fmt.Sprintf("%s recorded by an older flow, which kept no record of what it made, so the flow says what to undo; "+
		"the variables %s differ from the run's and would point it elsewhere", strings.Join(e.Addrs, ", "), strings.Join(e.Vars, ", "))
}
