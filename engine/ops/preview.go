package ops

import (
	"context"
	"fmt"
	"strings"

	"github.com/hashicorp/go-hclog"
	"github.com/zclconf/go-cty/cty"

	"github.com/flowdev/flow/engine/plan"
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

// Decisions says, in plan order, which instances a run of p resuming from previous would
// run or skip, using the same fingerprints as the run itself. An instance whose
// dependencies will run is "run?": it is skipped at run time only if its inputs come
// out unchanged. An instance replace selects runs whatever its record. It does not
// refresh (see Preview, which does).
func Decisions(p *plan.Plan, previous map[string]*state.Instance, replace []string) []Decision {
	return preview(p, previewSpec{Spec: Spec{Previous: previous, Replace: replace}})
}

// Spec is what a preview starts from.
type Spec struct {
	Previous map[string]*state.Instance
	Replace  []string
	From     uint64 // the run Previous belongs to, named in reasons; 0: not named
	Dir      string // the directory a probe acts in when its record names none; "": the process's
}

// Refresh is how a preview looks at the objects of the successes it would let stand:
// at most Parallelism probes at once, each logging to Logger (nil: nowhere) named
// after its instance.
type Refresh struct {
	Parallelism int
	Logger      hclog.Logger
	Lineage     string // the state's lineage id (tasks.Env.Lineage)
}

// Preview is Decisions for a run starting from spec, with reasons that name the run
// it starts from; with refresh, every success it would let stand is first probed
// (see refreshAll), and one whose object drifted runs. Its error is the refresh's,
// ctx's when it ended (Ctrl-C).
func Preview(ctx context.Context, p *plan.Plan, spec Spec, refresh *Refresh) ([]Decision, error) {
	ps := previewSpec{Spec: spec}
	if refresh != nil {
		var err error
		if ps.look, err = refreshAll(ctx, p, ps, *refresh); err != nil {
			return nil, fmt.Errorf("refresh: %w", err)
		}
	}
	return preview(p, ps), nil
}

// previewSpec is a Spec, with how it refreshes.
type previewSpec struct {
	Spec
	// look refreshes an instance whose success would stand: "" when it still does,
	// else why it runs again; nil: no refresh.
	look func(inst *plan.Instance, ev *plan.Evaluated, prev *state.Instance) string
}

func preview(p *plan.Plan, spec previewSpec) []Decision {
	values := map[string]cty.Value{}
	out := make([]Decision, 0, len(p.Order))
	for _, addr := range p.Order {
		inst := p.Instances[addr]
		d := Decision{Addr: addr, Action: ActionRun}
		prev := spec.Previous[addr]
		var waitsOn string
		for _, dep := range inst.Deps {
			if _, ok := values[dep]; !ok {
				waitsOn = dep
				break
			}
		}
		switch {
		case plan.AnySelects(spec.Replace, addr):
			d.Reason = replaceReason(inst, prev)
		case prev == nil || prev.Status == state.Pending:
			d.Reason = "not run before"
		case prev.Status != state.Succeeded:
			d.Reason = fmt.Sprintf("previous attempt %s", prev.Status)
		case prev.Removed:
			d.Reason = "undone when it had left the flow"
		case waitsOn != "":
			d.Action, d.Reason = ActionMaybe, fmt.Sprintf("succeeded before; waits for %s, which runs", waitsOn)
		default:
			d.Action, d.Reason = previewRestore(p, inst, prev, values, spec)
		}
		out = append(out, d)
	}
	return out
}

func previewRestore(p *plan.Plan, inst *plan.Instance, prev *state.Instance, values map[string]cty.Value, spec previewSpec) (Action, string) {
	ctx, diags := p.EvalContext(inst, func(addr string) cty.Value { return values[addr] })
	ev, d := p.Evaluate(inst, ctx, spec.look != nil)
	diags = append(diags, d...)
	if diags.HasErrors() {
		return ActionRun, "inputs cannot be evaluated: " + diagText(diags)
	}
	fp, hashes := plan.Fingerprint(inst.Task, ev.Inputs)
	value, why, ok := restore(p, inst, ev, prev, fp, hashes)
	if !ok {
		return ActionRun, why
	}
	if spec.look != nil && ev.Task != nil {
		if drifted := spec.look(inst, ev, prev); drifted != "" {
			return ActionRun, drifted
		}
	}
	values[inst.Addr] = value
	if spec.From != 0 {
		why = fmt.Sprintf("up to date: succeeded in run %d with the same inputs", spec.From)
	}
	return ActionSkip, why
}

// AgainReasons words, for a new run after last, why each instance runs: a new run
// runs every instance, whatever last did with it, and each says what that was.
func AgainReasons(ds []Decision, last *state.Run, recs map[string]*state.Instance) {
	for i := range ds {
		if ds[i].Action != ActionRun || strings.HasPrefix(ds[i].Reason, "replaced") {
			continue
		}
		rec := recs[ds[i].Addr]
		switch {
		case last.Destroys != 0 && rec != nil && rec.Status == state.Succeeded:
			ds[i].Reason = fmt.Sprintf("run %d destroyed it", last.ID)
		case last.Destroys != 0:
			ds[i].Reason = fmt.Sprintf("after destroy run %d", last.ID)
		case rec != nil && rec.Removed:
			ds[i].Reason = fmt.Sprintf("run %d removed it (it had left the flow)", last.ID)
		case rec == nil || rec.Status == state.Pending:
			ds[i].Reason = fmt.Sprintf("new since run %d", last.ID)
		case rec.Status == state.Succeeded:
			ds[i].Reason = fmt.Sprintf("again: succeeded in run %d", last.ID)
		default:
			ds[i].Reason = fmt.Sprintf("again: %s in run %d", rec.Status, last.ID)
		}
	}
}

// NotePending adds to the reason of each decision of p whose instance holds pending
// undos in live (deposed objects, see deposed.go) that the run undoes them first.
func NotePending(ds []Decision, p *plan.Plan, live map[string]Orphan) {
	for i := range ds {
		o, ok := live[ds[i].Addr]
		if !ok || len(o.Rec.Deposed) == 0 {
			continue
		}
		ds[i].Reason += "; first undoes what it made before " + pendingObjects(p.Instances[ds[i].Addr].Task.Kind, o.Rec)
	}
}
