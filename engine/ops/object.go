package ops

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/zclconf/go-cty/cty"
	ctyjson "github.com/zclconf/go-cty/cty/json"

	"github.com/flowdev/flow/engine/plan"
	"github.com/flowdev/flow/engine/state"
	"github.com/flowdev/flow/engine/walk"
	"github.com/flowdev/flow/internal/procgroup"
	"github.com/flowdev/flow/tasks"
)

// Each success records its object, as Terraform's state does: the inputs its task
// succeeded with (less what derives from a secret, named in Withheld), the directory
// it acted in and what it waited for. Every undo — flow destroy, --replace, a dropped
// instance — and every refresh probe decodes the task from that record, never from the
// flow as it reads today, so changed variables, a changed flow or another working
// directory cannot point an undo at something the run did not make. Only a secret,
// which the record never holds, is taken from the flow again.

// keepsObject reports whether a success of kind records its inputs: when it can be
// undone or its object looked at, as kind's registration found.
func keepsObject(kind *tasks.Type) bool {
	return kind.Destroys() || kind.Probes()
}

// recordedTask decodes rec's task of type kind from its recorded inputs. A withheld
// input (it derived from a secret) is taken from now, the flow's evaluation, when it
// holds a known value; one that the task's Destroy reads and that now cannot supply is
// an error wrapping errNotStored.
func recordedTask(kind *tasks.Type, rec *state.Instance, now map[string]cty.Value) (tasks.Task, error) {
	values := make(map[string]cty.Value, len(rec.Inputs)+len(rec.Withheld))
	for name, sv := range rec.Inputs {
		v, err := sv.Decode()
		if err != nil {
			return nil, fmt.Errorf("read recorded input %q: %w", name, err)
		}
		values[name] = v
	}
	for _, name := range rec.Withheld {
		if v, ok := now[name]; ok && v.IsWhollyKnown() {
			values[name], _ = v.UnmarkDeep()
			continue
		}
		if slices.Contains(kind.DestroyReads, name) || len(kind.DestroyReads) == 0 {
			return nil, fmt.Errorf("%s: %w", name, errNotStored)
		}
	}
	task := kind.New()
	if err := tasks.Decode(task, values); err != nil {
		return nil, fmt.Errorf("decode the recorded inputs: %w", err)
	}
	return task, nil
}

// wholyKnown reports whether every one of inputs is known: an evaluation that reads
// what was not stored says nothing about what the flow says now.
func wholyKnown(inputs map[string]cty.Value) bool {
	for _, v := range inputs {
		if !v.IsWhollyKnown() {
			return false
		}
	}
	return inputs != nil
}

// objectText names, on one line, the object rec recorded, as plan --destroy shows it:
// its undo attribute's value (exec: the undo script), else the attributes its Destroy
// reads; then the directory. "" when there is nothing recorded to show.
func objectText(kind *tasks.Type, rec *state.Instance) string {
	if kind == nil || rec == nil || rec.Inputs == nil {
		return ""
	}
	var parts []string
	if kind.UndoAttr != "" {
		if v, ok := recordedInput(rec, kind.UndoAttr); ok {
			parts = append(parts, oneLine(v))
		}
	} else {
		var attrs []string
		for _, name := range sortedNames(kind.DestroyReads) {
			if v, ok := recordedInput(rec, name); ok {
				attrs = append(attrs, name+" = "+oneLine(v))
			}
		}
		if len(attrs) > 0 {
			parts = append(parts, "("+strings.Join(attrs, ", ")+")")
		}
	}
	if rec.Dir != "" {
		parts = append(parts, "in "+rec.Dir)
	}
	return strings.Join(parts, " ")
}

// recordedInput is rec's recorded input name, when it holds a value that is set.
func recordedInput(rec *state.Instance, name string) (cty.Value, bool) {
	sv, ok := rec.Inputs[name]
	if !ok {
		return cty.NilVal, false
	}
	v, err := sv.Decode()
	if err != nil || v.IsNull() || v.Type() == cty.String && v.AsString() == "" {
		return cty.NilVal, false
	}
	return v, true
}

func sortedNames(names []string) []string {
	out := slices.Clone(names)
	sort.Strings(out)
	return out
}

// oneLine is v as a short single line: strings quoted, long ones cut.
func oneLine(v cty.Value) string {
	var s string
	if v.Type() == cty.String {
		s = fmt.Sprintf("%q", v.AsString())
	} else {
		s = "(a value)"
		if j, err := ctyjson.Marshal(v, v.Type()); err == nil {
			s = string(j)
		}
	}
	const max = 120
	if len(s) > max {
		s = s[:max-3] + "..."
	}
	return s
}

// noteGroup is the tasks.Env.Started of an attempt of addr: it keeps the process group
// of the command the instance runs in its record, so a resume after a crash can tell a
// survivor (see stopSurvivor).
func noteGroup(w *walk.Walk, addr string) func(int, uint64) {
	return func(group int, start uint64) {
		rec := w.Update(addr, func(rec *state.Instance) { rec.Group, rec.GroupStart = group, start })
		w.Submit(rec, nil)
	}
}

// stopSurvivor stops the process group prev recorded when the process that led it is
// still the one that started it: a run killed before its command ended leaves the
// command running, and running the instance again beside it would make a second copy.
func stopSurvivor(w *walk.Walk, addr string, prev *state.Instance) {
	if prev == nil || !procgroup.Survives(prev.Group, prev.GroupStart) {
		return
	}
	w.Say("%s: process group %d of an earlier attempt still runs; stopping it first", addr, prev.Group)
	procgroup.Stop(prev.Group, survivorGrace)
}

// survivorGrace is how long a survivor of an earlier attempt gets after SIGTERM.
const survivorGrace = 5 * time.Second

// objectChanged returns the record of the object an earlier attempt made for inst (one
// that failed or was interrupted too: it may have made part of it) when
// what identifies that object changed in ev (the attributes its type's Destroy reads:
// exec's undo, env and dir; kubeconfig's path), so the attempt undoes it before it
// makes the new one, as Terraform replaces a resource whose identifying attribute
// changed; else nil. A type that does not name what its Destroy reads changes its
// object in place.
func objectChanged(w *walk.Walk, inst *plan.Instance, ev *plan.Evaluated) *state.Instance {
	made := w.Options().Made[inst.Addr]
	kind := inst.Task.Kind
	if made == nil || !Ran(made) || !made.HasObject() || len(kind.DestroyReads) == 0 || keepReason(inst) != "" {
		return nil
	}
	var changed []string
	for _, name := range kind.DestroyReads {
		if slices.Contains(made.Withheld, name) {
			continue // a secret: never recorded, so never compared
		}
		was, _ := recordedInput(made, name)
		now, ok := ev.Inputs[name]
		if ok {
			now, _ = now.UnmarkDeep()
		}
		if !ok || now.IsNull() || now.Type() == cty.String && now.AsString() == "" {
			now = cty.NilVal
		}
		if !sameValue(was, now) {
			changed = append(changed, name)
		}
	}
	if len(changed) == 0 {
		return nil
	}
	w.Say("%s: %s changed since it was made; undoing what it made first", inst.Addr, strings.Join(changed, ", "))
	return made
}

// sameValue compares two recorded-or-evaluated values; NilVal means unset.
func sameValue(a, b cty.Value) bool {
	if a == cty.NilVal || b == cty.NilVal {
		return a == cty.NilVal && b == cty.NilVal
	}
	if !a.IsWhollyKnown() || !b.IsWhollyKnown() {
		return true // unknown now: cannot tell, and an undo on a guess could remove the wrong thing
	}
	eq := a.Equals(b)
	return eq.IsKnown() && eq.True()
}
