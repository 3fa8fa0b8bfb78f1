package plan

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
// warnings included, of every phase in one pass: a phase with errors does not stop
// the next (only syntax errors stop it all), so unknown attributes, references to
// what is not declared and values of the wrong type are reported together. What a
// later phase finds on a range an earlier one already reported is the same mistake
// seen again and left out. Loaded is nil when one is an error, and Flow (for printing
// sources) is returned whenever the files parsed.
// Its tasks act in the process's working directory (see LoadIn).
func Load(path string, reg *tasks.Registry, vars config.VarInputs) (*Loaded, *config.Flow, hcl.Diagnostics) {
	return LoadIn(path, "", reg, vars)
}

// LoadIn is Load for a flow whose tasks act in dir, a run's directory ("" means the
// process's working directory): see config.LoadIn.
func LoadIn(path, dir string, reg *tasks.Registry, vars config.VarInputs) (*Loaded, *config.Flow, hcl.Diagnostics) {
	flow, values, plan, diags := check(path, dir, reg, vars)
	if diags.HasErrors() {
		return nil, flow, diags
	}
	return &Loaded{Flow: flow, Vars: values, Plan: plan}, flow, diags
}

// Check runs Load's phases and returns the flow, its plan and the diagnostics, the
// plan (nil only when the files did not parse) whatever the errors: a plan with
// errors is for looking at a flow that does not load, never for running it.
func Check(path string, reg *tasks.Registry, vars config.VarInputs) (*config.Flow, *Plan, hcl.Diagnostics) {
	flow, _, plan, diags := check(path, "", reg, vars)
	return flow, plan, diags
}

func check(path, dir string, reg *tasks.Registry, vars config.VarInputs) (*config.Flow, map[string]cty.Value, *Plan, hcl.Diagnostics) {
	flow, diags := config.LoadIn(path, dir, reg)
	if flow == nil || !flow.Decoded {
		return flow, nil, nil, diags
	}
	values, d := flow.Assign(vars)
	diags = append(diags, consequences(diags, d)...)
	scope, d := flow.NewScope(values)
	diags = append(diags, consequences(diags, d)...)
	plan, d := NewPlan(flow, scope)
	diags = append(diags, consequences(diags, d)...)
	return flow, values, plan, diags
}

// consequences is later, without what earlier already reported: a diagnostic whose
// range overlaps the range of an earlier error (an evaluation failing on a reference
// the checks already named, say) and repeats. After an error, later warnings are left
// out too: what is in error is unknown to later phases, and "for_each not expanded"
// would name each use of it.
func consequences(earlier, later hcl.Diagnostics) hcl.Diagnostics {
	var out hcl.Diagnostics
	for _, d := range later {
		if d.Severity == hcl.DiagWarning && earlier.HasErrors() {
			continue
		}
		if !reported(earlier, d) && !repeated(out, d) {
			out = append(out, d)
		}
	}
	return out
}

// repeated reports whether diags holds d already.
func repeated(diags hcl.Diagnostics, d *hcl.Diagnostic) bool {
	for _, e := range diags {
		if e.Severity == d.Severity && e.Summary == d.Summary && e.Detail == d.Detail && sameRange(e.Subject, d.Subject) {
			return true
		}
	}
	return false
}

func reported(diags hcl.Diagnostics, d *hcl.Diagnostic) bool {
	if repeated(diags, d) {
		return true
	}
	for _, e := range diags {
		if e.Severity != hcl.DiagError {
			continue
		}
		if d.Subject != nil && e.Subject != nil && overlap(*e.Subject, *d.Subject) {
			return true
		}
	}
	return false
}

func sameRange(a, b *hcl.Range) bool {
	return a == nil && b == nil || a != nil && b != nil && *a == *b
}

// overlap reports whether two ranges of one file share a byte, or are the same
// empty range.
func overlap(a, b hcl.Range) bool {
	if a.Filename != b.Filename {
		return false
	}
	if a == b {
		return true
	}
	return a.Start.Byte < b.End.Byte && b.Start.Byte < a.End.Byte
}
