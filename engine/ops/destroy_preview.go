package ops

import (
	"fmt"
	"strings"

	"github.com/flowdev/flow/engine/plan"
	"github.com/flowdev/flow/engine/state"
	"github.com/flowdev/flow/tasks"
)

// What a destroy does with an instance, as DestroyPreview says it.
const (
	ActionDestroy   Action = "destroy"   // it is undone
	ActionKeep      Action = "keep"      // it is left as it is (Reason says why)
	ActionDestroyed Action = "destroyed" // an earlier attempt of the destroy undid it
)

// DestroyPreview is what a destroy would do, as `flow plan --destroy` shows it and
// `flow destroy` asks about.
type DestroyPreview struct {
	Target    *state.Run // the run whose instances are undone
	Continues *state.Run // the unfinished destroy run continued, or nil
	// Flow and Dir are where the flow is read and the undos execute.
	Flow, Dir string
	// Decisions are the instances Target started, in the order a destroy with one
	// slot undoes them: latest in plan order first.
	Decisions []Decision
}

// Destroys is how many instances the destroy would undo.
func (p *DestroyPreview) Destroys() int {
	n := 0
	for _, d := range p.Decisions {
		if d.Action == ActionDestroy {
			n++
		}
	}
	return n
}

// recordedText says what a destroy of inst will undo: the object its record holds, or
// that an older flow recorded none.
func recordedText(inst *plan.Instance, rec *state.Instance) string {
	text := ""
	switch {
	case rec != nil && !ownObject(rec):
	case rec == nil || !rec.HasObject():
		text = " (recorded by an older flow, which kept no record of what it made: undone as the flow says now)"
	default:
		if t := objectText(inst.Task.Kind, rec); t != "" {
			text = " " + t
		}
	}
	return text + PendingText(inst.Task.Kind, rec)
}

// PendingText names rec's pending undos, the deposed objects an undo must still act
// on, as plan --destroy shows them: "" when there are none.
func PendingText(kind *tasks.Type, rec *state.Instance) string {
	if rec == nil || len(rec.Deposed) == 0 {
		return ""
	}
	return "; pending undo of what it made before " + pendingObjects(kind, rec)
}

// pendingObjects lists rec's deposed objects, newest first, with how many: "(2): ...; ...".
func pendingObjects(kind *tasks.Type, rec *state.Instance) string {
	var parts []string
	for i := len(rec.Deposed) - 1; i >= 0; i-- {
		parts = append(parts, objectText(kind, rec.Deposed[i]))
	}
	return fmt.Sprintf("(%d): %s", len(parts), strings.Join(parts, "; "))
}

// DestroyDecisions decides, for each instance the run with records created started,
// what a destroy does with it; done holds the records of an earlier attempt of the
// destroy. An instance that will be kept only because an undo fails is not foreseen.
func DestroyDecisions(p *plan.Plan, created, done map[string]*state.Instance) []Decision {
	order := undone(p, created)
	out := make([]Decision, 0, len(order))
	for i := len(order) - 1; i >= 0; i-- {
		inst := p.Instances[order[i]]
		reason := undoReason(inst)
		if rec := created[inst.Addr]; rec != nil && !ownObject(rec) {
			reason = "its own object undone already" // only pending undos are left
		}
		d := Decision{Addr: inst.Addr, Action: ActionDestroy, Reason: reason + recordedText(inst, created[inst.Addr])}
		switch {
		case done[inst.Addr] != nil && done[inst.Addr].Status == state.Succeeded:
			d.Action, d.Reason = ActionDestroyed, "already destroyed"
		case keepReason(inst) != "":
			d.Action, d.Reason = ActionKeep, keepReason(inst)
		}
		out = append(out, d)
	}
	return out
}

// Unrecorded lists, in plan order, the instances of p that the run whose records are
// created started and that a destroy would undo from the flow as it reads now, since
// an older flow recorded no object for them.
func Unrecorded(p *plan.Plan, created map[string]*state.Instance) []string {
	var out []string
	for _, addr := range p.Order {
		rec := created[addr]
		if ownObject(rec) && !rec.HasObject() && keepReason(p.Instances[addr]) == "" {
			out = append(out, addr)
		}
	}
	return out
}
