package tasks

import "context"

// Checker is a task that can say, before Run, whether what Run would create already
// exists. Built-in types fold this check into Run; a plugin type (plugin/server) may
// implement it, and flow then calls it before every Run: Present skips Run and
// reports "already present" with the outputs Check returns, Differs fails the attempt
// naming the difference, Absent runs the task. Check must be read-only, honour ctx,
// and tolerate what a killed attempt left half-made (report it Absent or Differs).
type Checker interface {
	Check(ctx context.Context, env *Env) (CheckResult, error)
}

// CheckState is what a Checker found.
type CheckState int

const (
	Absent  CheckState = iota // nothing there: Run creates it
	Present                   // there as configured: Run is skipped
	Differs                   // there, but not as configured: the attempt fails
)

// CheckResult is a Checker's answer. Detail says what was found (shown after
// "already present" or as the difference); Outputs, for Present, are what Run would
// have returned.
type CheckResult struct {
	State   CheckState
	Detail  string
	Outputs Outputs
}
