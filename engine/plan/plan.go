package plan

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"

	"github.com/flowdev/flow/engine/config"
	"github.com/flowdev/flow/engine/dag"
)

// Instance is one task instance: a task block, or one for_each element of it, in the
// root flow or in one instance of a module call.
type Instance struct {
	Addr  string // TYPE.NAME or TYPE.NAME["KEY"], under module.NAME["KEY"]. inside a module
	Task  *config.Task
	Key   cty.Value // each.key, or NilVal without for_each
	Value cty.Value // each.value, or NilVal
	// Deps are the instances this one waits for, sorted.
	Deps []string
	// reads[i] is what Task.Refs[i] reads, seen from this instance.
	reads []resolved
	mod   *moduleInstance
	Index int // index in Plan.Order
}

// Module returns the address of the module instance the instance belongs to, "" in
// the root flow.
func (i *Instance) Module() string { return i.mod.path }

// resolved is what one reference reads from one point of view.
type resolved struct {
	insts []string          // the task instances it waits for
	mods  []*moduleInstance // for a module reference: the module instances it reads
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
	root      *moduleInstance
	// cyclic is set when a value reads itself through module inputs and outputs.
	cyclic bool
}

// InstanceAddr renders the address of one instance of a task.
func InstanceAddr(taskAddr string, key cty.Value) string {
	if key == cty.NilVal {
		return taskAddr
	}
	return fmt.Sprintf("%s[%q]", taskAddr, key.AsString())
}

// NewPlan expands every task's and module call's for_each, resolves each reference to
// the instances it reads, builds the graph, rejects cycles, and type-checks each
// instance as far as values are known before the run. Steps: expand, connect, check
// cycles, check types; an error in one step does not stop the next, so all are
// reported (a task whose for_each failed has no instances, and what reads it sees an
// unknown value). A plan with errors is for its diagnostics only.
func NewPlan(flow *config.Flow, scope *config.Scope) (*Plan, hcl.Diagnostics) {
	p := &Plan{Flow: flow, Scope: scope, Instances: map[string]*Instance{},
		Graph: dag.New[string](), root: newModuleInstance("", flow, scope)}
	diags := p.expand(p.root)
	diags = append(diags, p.connect(p.root)...)
	order, err := p.Graph.TopoOrder()
	if err != nil {
		return p, append(diags, p.cycleDiagnostics(err)...)
	}
	if p.cyclic { // evaluating values that read themselves would never end
		return p, diags
	}
	p.Order = order
	for i, addr := range order {
		p.Instances[addr].Index = i
	}
	// An evaluation failing on a reference connect found no instance for is that.
	return p, append(diags, consequences(diags, p.typeCheck())...)
}

// expand creates m's task instances, then its module calls' instances and theirs.
func (p *Plan) expand(m *moduleInstance) hcl.Diagnostics {
	var diags hcl.Diagnostics
	for _, t := range m.flow.Tasks {
		elems, d := p.expandForEach(m, t.ForEach)
		diags = append(diags, d...)
		if t.ForEach != nil && elems == nil { // no value yet, or in error: unknown
			m.unexpanded[t.Addr] = true
		}
		for _, e := range elems {
			inst := &Instance{Addr: m.addr(InstanceAddr(t.Addr, e.Key)), Task: t, Key: e.Key, Value: e.Value, mod: m}
			p.Instances[inst.Addr] = inst
			m.tasks[t.Addr] = append(m.tasks[t.Addr], inst)
			p.Graph.Add(inst.Addr)
		}
	}
	for _, call := range m.flow.Modules {
		if call.Flow == nil {
			continue
		}
		elems, d := p.expandForEach(m, call.ForEach)
		diags = append(diags, d...)
		if call.ForEach != nil && elems == nil { // no value yet, or in error: unknown
			m.unexpanded[call.Addr()] = true
		}
		for _, e := range elems {
			child, d := instantiate(m, call, e, p.Scope)
			diags = append(diags, d...)
			m.calls[call.Name] = append(m.calls[call.Name], child)
			diags = append(diags, p.expand(child)...)
		}
	}
	return diags
}

// expandForEach evaluates a for_each in m, which must not read a value that is
// known only once tasks run.
func (p *Plan) expandForEach(m *moduleInstance, forEach hcl.Expression) ([]config.Instance, hcl.Diagnostics) {
	if m.readsDynamic(forEach) {
		return nil, m.annotate(hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Invalid for_each",
			Detail:  "for_each must be known before the run starts, but it reads a module input that reads a task or module output.",
			Subject: forEach.Range().Ptr()}})
	}
	elems, d := m.scope.ExpandForEach(forEach)
	return elems, m.annotate(d)
}

// connect resolves references per instance: TYPE.NAME[each.key] evaluates each.key
// for this instance, so member1's chain never waits on member2's; a module output
// waits only for the instances that output reads.
func (p *Plan) connect(m *moduleInstance) hcl.Diagnostics {
	var diags hcl.Diagnostics
	for _, t := range m.flow.Tasks {
		for _, inst := range m.tasks[t.Addr] {
			diags = append(diags, m.annotate(p.connectInstance(inst))...)
		}
	}
	// Values that no task reads are still evaluated (a module instance's dynamic
	// variables) or printed (outputs): a cycle among them must be found here too.
	for _, name := range slices.Sorted(maps.Keys(m.dynamic)) {
		_, d := p.scopeDeps(m, m.call.Inputs[name].Expr)
		_, d2 := p.memoDeps(m, "var."+name, m.call.Inputs[name].Expr.Range(), func() ([]string, hcl.Diagnostics) {
			return p.inputDeps(m, name)
		})
		diags = append(diags, m.annotate(append(d, d2...))...)
	}
	for _, o := range m.flow.Outputs {
		_, d := p.outputDeps(m, o.Name)
		diags = append(diags, m.annotate(d)...)
	}
	for _, child := range m.children() {
		child.after = append([]string{}, m.after...)
		for _, r := range child.call.DependsOn {
			res, d := p.resolve(m, child.key, child.value, child.path, r, true)
			diags = append(diags, m.annotate(d)...)
			child.after = append(child.after, res.insts...)
		}
		diags = append(diags, p.connect(child)...)
	}
	return diags
}

func (p *Plan) connectInstance(inst *Instance) hcl.Diagnostics {
	var diags hcl.Diagnostics
	t, m := inst.Task, inst.mod
	var deps []string
	deps = append(deps, m.after...)
	inst.reads = make([]resolved, len(t.Refs))
	for i, r := range t.Refs {
		res, d := p.resolve(m, inst.Key, inst.Value, inst.Addr, r, false)
		diags = append(diags, d...)
		inst.reads[i] = res
		deps = append(deps, res.insts...)
	}
	for _, r := range t.DependsOn {
		res, d := p.resolve(m, inst.Key, inst.Value, inst.Addr, r, true)
		diags = append(diags, d...)
		deps = append(deps, res.insts...)
	}
	if len(m.dynamic) > 0 { // variables that read tasks: wait for what they read
		for _, e := range t.Exprs() {
			d, dd := p.scopeDeps(m, e)
			deps, diags = append(deps, d...), append(diags, dd...)
		}
	}
	inst.Deps = uniqueSorted(deps)
	for _, a := range inst.Deps {
		p.Graph.Connect(inst.Addr, a)
	}
	return diags
}

// resolve returns what reference r reads when seen from module instance m with each
// set to key and value, on behalf of from (an address, for messages). A reference to
// a module output waits for the instances the output reads; with whole set (for
// depends_on), a reference to a module waits for every task in it.
func (p *Plan) resolve(m *moduleInstance, key, value cty.Value, from string, r config.Ref, whole bool) (resolved, hcl.Diagnostics) {
	want := r.Key
	if r.KeyExpr != nil && staticOnly(r.KeyExpr) {
		v, d := r.KeyExpr.Value(m.scope.EvalContext(key, value))
		if d.HasErrors() {
			return resolved{}, d
		}
		if s, err := convert.Convert(v, cty.String); err == nil && s.IsKnown() && !s.IsNull() {
			want = s
		}
	}
	if r.IsModule() {
		return p.resolveModule(m, from, r, want, whole)
	}
	targets := m.tasks[r.Addr]
	if want == cty.NilVal || len(targets) == 0 || targets[0].Key == cty.NilVal {
		return resolved{insts: addrs(targets)}, nil
	}
	addr := m.addr(InstanceAddr(r.Addr, want))
	if _, ok := p.Instances[addr]; !ok {
		return resolved{}, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "No such instance",
			Detail:  fmt.Sprintf("%s has no instance %q (seen from %s); its keys are %s.", m.addr(r.Addr), want.AsString(), from, keyList(targets)),
			Subject: r.Range.Ptr()}}
	}
	return resolved{insts: []string{addr}}, nil
}

func (p *Plan) resolveModule(m *moduleInstance, from string, r config.Ref, want cty.Value, whole bool) (resolved, hcl.Diagnostics) {
	var res resolved
	children := m.calls[r.Name]
	for _, c := range children {
		if want == cty.NilVal || c.key == cty.NilVal || c.key.AsString() == want.AsString() {
			res.mods = append(res.mods, c)
		}
	}
	if want != cty.NilVal && len(children) > 0 && children[0].key != cty.NilVal && len(res.mods) == 0 {
		keys := make([]string, len(children))
		for i, c := range children {
			keys[i] = fmt.Sprintf("%q", c.key.AsString())
		}
		return res, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "No such instance",
			Detail: fmt.Sprintf("%s has no instance %q (seen from %s); its keys are %s.",
				m.addr(r.Addr), want.AsString(), from, strings.Join(keys, ", ")),
			Subject: r.Range.Ptr()}}
	}
	var diags hcl.Diagnostics
	for _, c := range res.mods {
		switch {
		case whole:
			res.insts = append(res.insts, c.allTasks()...)
		case r.Attr != "":
			d, dd := p.outputDeps(c, r.Attr)
			res.insts, diags = append(res.insts, d...), append(diags, dd...)
		default:
			for _, o := range c.flow.Outputs {
				d, dd := p.outputDeps(c, o.Name)
				res.insts, diags = append(res.insts, d...), append(diags, dd...)
			}
		}
	}
	return res, diags
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
			Detail: fmt.Sprintf("%s: %s%s.", cycleSubject(len(c)), text, c[0]), Subject: first.Task.DeclRange.Ptr()})
	}
	return diags
}

// cycleSubject says what a cycle of n instances is: one that waits for itself, or
// several that wait for each other.
func cycleSubject(n int) string {
	if n == 1 {
		return "This task depends on itself"
	}
	return "These tasks depend on each other in a cycle"
}

// Dependents returns the instances that wait for addr.
func (p *Plan) Dependents(addr string) []string { return p.Graph.Dependents(addr) }

// TaskInstances returns the instances of task TYPE.NAME of the root flow in key order.
func (p *Plan) TaskInstances(taskAddr string) []*Instance { return p.root.tasks[taskAddr] }
