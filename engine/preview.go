package engine

import (
	"fmt"

	"github.com/zclconf/go-cty/cty"

	"github.com/flowdev/flow/engine/state"
)

// Action is what a resume would do with one instance.
type Action string

const (
	ActionRun   Action = "run"
	ActionSkip  Action = "skip"
	ActionMaybe Action = "run?" // decided at run time, when its dependencies' outputs are known
)

// Decision is the previewed action for one instance and why.
type Decision struct {
	Addr   string
	Action Action
	Reason string
}

// Preview says, in plan order, which instances a run resuming from previous would
// run or skip, using the same fingerprints as the run itself. An instance whose
// dependencies will run is "run?": it is skipped at run time only if its inputs come
// out unchanged. An instance replace selects runs whatever its record.
func (p *Plan) Preview(previous map[string]*state.Instance, replace []string) []Decision {
	values := map[string]cty.Value{}
	out := make([]Decision, 0, len(p.Order))
	for _, addr := range p.Order {
		inst := p.Instances[addr]
		d := Decision{Addr: addr, Action: ActionRun}
		prev := previous[addr]
		var waitsOn string
		for _, dep := range inst.Deps {
			if _, ok := values[dep]; !ok {
				waitsOn = dep
				break
			}
		}
		switch {
		case anySelects(replace, addr):
			d.Reason = "replaced (--replace)"
		case prev == nil || prev.Status == state.Pending:
			d.Reason = "not run before"
		case prev.Status != state.Succeeded:
			d.Reason = fmt.Sprintf("previous attempt %s", prev.Status)
		case waitsOn != "":
			d.Action, d.Reason = ActionMaybe, fmt.Sprintf("succeeded before; waits for %s, which runs", waitsOn)
		default:
			d.Action, d.Reason = p.previewRestore(inst, prev, values)
		}
		out = append(out, d)
	}
	return out
}

func (p *Plan) previewRestore(inst *Instance, prev *state.Instance, values map[string]cty.Value) (Action, string) {
	ctx, diags := p.evalContext(inst, func(addr string) cty.Value { return values[addr] })
	ev, d := p.evaluate(inst, ctx, false)
	diags = append(diags, d...)
	if diags.HasErrors() {
		return ActionRun, "inputs cannot be evaluated: " + diagText(diags)
	}
	fp, hashes := fingerprint(inst.Task, ev.inputs)
	value, why, ok := p.restore(inst, ev, prev, fp, hashes)
	if !ok {
		return ActionRun, why
	}
	values[inst.Addr] = value
	return ActionSkip, why
}
