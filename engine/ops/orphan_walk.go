package ops

import (
	"fmt"
	"slices"

	"github.com/flowdev/flow/engine/config"
	"github.com/flowdev/flow/engine/dag"
	"github.com/flowdev/flow/engine/plan"
	"github.com/flowdev/flow/engine/state"
	"github.com/flowdev/flow/engine/walk"
	"github.com/flowdev/flow/tasks"
)

// Orphans are undone by the one walker (engine/walk), in a destroy's shape, over a plan of their
// own: one instance per orphan, decoded from its record instead of the flow, which no
// longer has it.

// orphanPlan is the plan of the walk that undoes orphans: each waits for the orphans
// recorded as depending on it, so independent ones are undone at once, up to the
// parallelism. When one was recorded without its dependencies (by an older flow), the
// walk goes one at a time, in orphans' order.
func orphanPlan(orphans []Orphan, reg *tasks.Registry, scope *config.Scope) (*plan.Plan, map[string]*Orphan) {
	p := &plan.Plan{Scope: scope, Instances: map[string]*plan.Instance{}, Graph: dag.New[string]()}
	decoded := make(map[string]*Orphan, len(orphans))
	chained := false
	for i, o := range orphans {
		addr := o.Rec.Address
		kind, _ := reg.Lookup(o.Rec.Type)
		task := &config.Task{Type: o.Rec.Type, Addr: addr, Kind: kind, RetainOnDestroy: o.Rec.Retain}
		p.Instances[addr] = &plan.Instance{Addr: addr, Task: task, Index: len(orphans) - 1 - i}
		decoded[addr] = &orphans[i]
		p.Order = append(p.Order, addr)
		p.Graph.Add(addr)
		chained = chained || !o.Rec.DepsKnown
	}
	for i, o := range orphans {
		addr := o.Rec.Address
		if chained && i+1 < len(orphans) {
			p.Graph.Connect(addr, orphans[i+1].Rec.Address) // the next one waits for this one
			continue
		}
		for _, dep := range o.Rec.Deps {
			if p.Instances[dep] != nil {
				p.Graph.Connect(addr, dep)
			}
		}
	}
	for _, addr := range p.Order {
		p.Instances[addr].Deps = p.Graph.DependsOn(addr)
	}
	slices.Reverse(p.Order) // plan order: what is undone last first
	return p, decoded
}

// newOrphanDestroyer prepares the walk that undoes orphans (see orphanPlan).
func newOrphanDestroyer(orphans []Orphan, reg *tasks.Registry, scope *config.Scope, opts walk.Options) *walk.Runner {
	p, decoded := orphanPlan(orphans, reg, scope)
	return walk.New(p, destroyShape(p, orphanRecords(orphans), decoded), opts)
}

// orphanKeep says why undoing o leaves it as it is, or "" when it is undone.
func orphanKeep(kind *tasks.Type, o *Orphan) string {
	switch {
	case kind == nil:
		return fmt.Sprintf("no longer in the flow; left as it is (there is no task type %q)", o.Rec.Type)
	case o.Rec.Retain:
		return "no longer in the flow; retained (retain_on_destroy)"
	case !kind.Destroys():
		return fmt.Sprintf("no longer in the flow; left as it is (%s)", kind.UndoGist())
	case len(o.Rec.Deposed) > 0:
		return "" // what it made before is undone whatever it sets now
	case kind.UndoAttr != "" && !setsInput(o.Rec, kind.UndoAttr) && o.Rec.HasObject():
		return fmt.Sprintf("no longer in the flow; left as it is (it sets no %s)", kind.UndoAttr)
	case !o.Rec.HasObject():
		return "no longer in the flow; left as it is (an older flow ran it, which kept no record of what it made)"
	}
	return ""
}

// orphanRecords is what orphanPlan's destroy undoes: each orphan's record.
func orphanRecords(orphans []Orphan) map[string]*state.Instance {
	m := make(map[string]*state.Instance, len(orphans))
	for _, o := range orphans {
		m[o.Rec.Address] = o.Rec
	}
	return m
}
