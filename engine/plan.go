package engine

import (
	"fmt"
	"sort"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"

	"github.com/flowdev/flow/engine/config"
	"github.com/flowdev/flow/engine/dag"
)

// Instance is one task instance: a task block, or one for_each element of it.
type Instance struct {
	Addr  string // TYPE.NAME or TYPE.NAME["KEY"]
	Task  *config.Task
	Key   cty.Value // each.key, or NilVal without for_each
	Value cty.Value // each.value, or NilVal
	// Deps are the instances this one waits for, sorted.
	Deps []string
	// deps per reference: refDeps[i] lists the instances Task.Refs[i] reads.
	refDeps [][]string
	order   int // index in Plan.Order
}

// Plan is a flow expanded into instances with their dependency graph, checked
// statically. It is read-only once NewPlan returns and safe for concurrent use.
type Plan struct {
	Flow  *config.Flow
	Scope *config.Scope
	// Order lists every instance address, dependencies first, ties by address.
	Order     []string
	Instances map[string]*Instance
	Graph     *dag.Graph[string]
	// byTask lists each task's instances in key order.
	byTask map[string][]*Instance
	// unexpanded holds tasks whose for_each has no value yet (validate without values).
	unexpanded map[string]bool
}

// InstanceAddr renders the address of one instance of a task.
func InstanceAddr(taskAddr string, key cty.Value) string {
	if key == cty.NilVal {
		return taskAddr
	}
	return fmt.Sprintf("%s[%q]", taskAddr, key.AsString())
}

// NewPlan expands every task's for_each, resolves each reference to the instances it
// reads, builds the graph, rejects cycles, and type-checks each instance as far as
// values are known before the run. Steps: expand, connect, check cycles, check types.
func NewPlan(flow *config.Flow, scope *config.Scope) (*Plan, hcl.Diagnostics) {
	p := &Plan{Flow: flow, Scope: scope, Instances: map[string]*Instance{},
		Graph: dag.New[string](), byTask: map[string][]*Instance{}, unexpanded: map[string]bool{}}
	diags := p.expand()
	if diags.HasErrors() {
		return p, diags
	}
	diags = append(diags, p.connect()...)
	if diags.HasErrors() {
		return p, diags
	}
	order, err := p.Graph.TopoOrder()
	if err != nil {
		return p, append(diags, p.cycleDiagnostics(err)...)
	}
	p.Order = order
	for i, addr := range order {
		p.Instances[addr].order = i
	}
	return p, append(diags, p.typeCheck()...)
}

func (p *Plan) expand() hcl.Diagnostics {
	var diags hcl.Diagnostics
	for _, t := range p.Flow.Tasks {
		elems, d := p.Scope.Expand(t)
		diags = append(diags, d...)
		if t.ForEach != nil && elems == nil && !d.HasErrors() {
			p.unexpanded[t.Addr] = true
		}
		for _, e := range elems {
			inst := &Instance{Addr: InstanceAddr(t.Addr, e.Key), Task: t, Key: e.Key, Value: e.Value}
			p.Instances[inst.Addr] = inst
			p.byTask[t.Addr] = append(p.byTask[t.Addr], inst)
			p.Graph.Add(inst.Addr)
		}
	}
	return diags
}

// connect resolves references per instance: TYPE.NAME[each.key] evaluates each.key
// for this instance, so member1's chain never waits on member2's.
func (p *Plan) connect() hcl.Diagnostics {
	var diags hcl.Diagnostics
	for _, t := range p.Flow.Tasks {
		for _, inst := range p.byTask[t.Addr] {
			deps := map[string]bool{}
			inst.refDeps = make([][]string, len(t.Refs))
			for i, r := range t.Refs {
				targets, d := p.resolve(inst, r)
				diags = append(diags, d...)
				inst.refDeps[i] = targets
				for _, a := range targets {
					deps[a] = true
				}
			}
			for _, r := range t.DependsOn {
				targets, d := p.resolve(inst, r)
				diags = append(diags, d...)
				for _, a := range targets {
					deps[a] = true
				}
			}
			for a := range deps {
				inst.Deps = append(inst.Deps, a)
				p.Graph.Connect(inst.Addr, a)
			}
			sort.Strings(inst.Deps)
		}
	}
	return diags
}

// resolve returns the instances a reference reads from the point of view of inst.
func (p *Plan) resolve(inst *Instance, r config.Ref) ([]string, hcl.Diagnostics) {
	targets := p.byTask[r.Addr]
	key := r.Key
	if r.KeyExpr != nil && staticOnly(r.KeyExpr) {
		v, d := r.KeyExpr.Value(p.Scope.EvalContext(inst.Key, inst.Value))
		if d.HasErrors() {
			return nil, d
		}
		if s, err := convert.Convert(v, cty.String); err == nil && s.IsKnown() && !s.IsNull() {
			key = s
		}
	}
	if key == cty.NilVal || len(targets) == 0 || targets[0].Key == cty.NilVal {
		return addrs(targets), nil
	}
	want := InstanceAddr(r.Addr, key)
	if _, ok := p.Instances[want]; !ok {
		return nil, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "No such instance",
			Detail:  fmt.Sprintf("%s has no instance %q (seen from %s); its keys are %s.", r.Addr, key.AsString(), inst.Addr, keyList(targets)),
			Subject: r.Range.Ptr()}}
	}
	return []string{want}, nil
}

// staticOnly reports whether expr uses only values known before the run.
func staticOnly(expr hcl.Expression) bool {
	for _, t := range expr.Variables() {
		switch t.RootName() {
		case "each", "var", "local", "path":
		default:
			return false
		}
	}
	return true
}

func addrs(insts []*Instance) []string {
	out := make([]string, len(insts))
	for i, in := range insts {
		out[i] = in.Addr
	}
	return out
}

func keyList(insts []*Instance) string {
	s := ""
	for i, in := range insts {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprintf("%q", in.Key.AsString())
	}
	return s
}

// cycleDiagnostics reports each cycle once, on the declaration of its first task.
func (p *Plan) cycleDiagnostics(err error) hcl.Diagnostics {
	ce, ok := err.(*dag.CycleError[string])
	if !ok {
		return hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Invalid graph", Detail: err.Error()}}
	}
	var diags hcl.Diagnostics
	for _, c := range ce.Cycles {
		first := p.Instances[c[0]]
		text := ""
		for _, a := range c {
			text += a + " -> "
		}
		diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Dependency cycle",
			Detail:  fmt.Sprintf("These tasks depend on each other in a cycle: %s%s.", text, c[0]),
			Subject: first.Task.DeclRange.Ptr()})
	}
	return diags
}

// Dependents returns the instances that wait for addr.
func (p *Plan) Dependents(addr string) []string { return p.Graph.Dependents(addr) }

// TaskInstances returns the instances of task TYPE.NAME in key order.
func (p *Plan) TaskInstances(taskAddr string) []*Instance { return p.byTask[taskAddr] }
