package plugin

import (
	"context"

	"github.com/flowdev/flow/tasks"
)

// Checker is a task that can say, before Run, whether what Run would create already
// exists: the plugin protocol's Check, so it lives with the protocol, and only a task
// type served from a plugin (plugin/server) implements it. Built-in types fold this
// check into Run, and say with tasks.Prober what a refresh looks at. The engine never
// sees a Checker: the plugin host calls Check itself, and flow's side of a plugin type
// (plugin/bridge) is a tasks.Prober when its type checks or probes.
//
// When a plugin's type implements it, the host calls it before every Run: Present
// skips Run and reports "already present" with the outputs Check returns, Differs
// fails the attempt naming the difference, Absent runs the task. Check must be
// read-only, honour ctx, and tolerate what a killed attempt left half-made (report it
// Absent or Differs).
type Checker interface {
	Check(ctx context.Context, env *tasks.Env) (CheckResult, error)
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
	Outputs tasks.Outputs
}
