package engine

import (
	"github.com/hashicorp/hcl/v2"

	"github.com/flowdev/flow/engine/plan"
	"github.com/flowdev/flow/tasks"
)

// The planner is engine/plan: the session plans through it and hands its plans to the
// walker. Its names are the engine's too, so that a caller of the engine imports one
// package.
type (
	// Plan is a flow expanded into instances with their dependency graph.
	Plan = plan.Plan
	// Instance is one task instance of a plan.
	Instance = plan.Instance
	// Loaded is a flow read, its variables assigned, and planned.
	Loaded = plan.Loaded
)

// Load reads the flow at path, assigns its variables and plans it (see plan.Load).
func Load(path string, reg *tasks.Registry, vars VarInputs) (*Loaded, *Flow, hcl.Diagnostics) {
	return plan.Load(path, reg, vars)
}

// Check is Load for looking at a flow that may not load: its plan whatever the errors
// (see plan.Check).
func Check(path string, reg *tasks.Registry, vars VarInputs) (*Flow, *Plan, hcl.Diagnostics) {
	return plan.Check(path, reg, vars)
}

// Selects reports whether target (an address as --target takes it) selects addr.
func Selects(target, addr string) bool { return plan.Selects(target, addr) }
