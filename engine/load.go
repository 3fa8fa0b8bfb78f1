package engine

import (
	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/flowdev/flow/engine/config"
	"github.com/flowdev/flow/tasks"
)

// Loaded is a flow read, its variables assigned, and planned.
type Loaded struct {
	Flow *config.Flow
	Vars map[string]cty.Value
	Plan *Plan
}

// Load reads the flow at path, assigns its variables from vars and plans it: the one
// pipeline every command that needs a plan goes through. It returns every diagnostic,
// warnings included; Loaded is nil when one is an error, and Flow (for printing
// sources) is returned whenever the files parsed.
func Load(path string, reg *tasks.Registry, vars config.VarInputs) (*Loaded, *config.Flow, hcl.Diagnostics) {
	flow, diags := config.Load(path, reg)
	if diags.HasErrors() {
		return nil, flow, diags
	}
	values, d := flow.Assign(vars)
	if diags = append(diags, d...); diags.HasErrors() {
		return nil, flow, diags
	}
	scope, d := flow.NewScope(values)
	if diags = append(diags, d...); diags.HasErrors() {
		return nil, flow, diags
	}
	plan, d := NewPlan(flow, scope)
	if diags = append(diags, d...); diags.HasErrors() {
		return nil, flow, diags
	}
	return &Loaded{Flow: flow, Vars: values, Plan: plan}, flow, diags
}
