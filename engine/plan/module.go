package plan

import (
	"fmt"
	"sort"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/flowdev/flow/engine/config"
)

// moduleInstance is the root flow or one instance of a module call: the scope its
// tasks and outputs are evaluated in, and what is declared directly in it.
//
// A module's variables are its call's inputs, evaluated in the caller's scope with the
// call's each. An input that reads a task or a module output is dynamic: unknown in
// scope, and evaluated again for every task instance that reads it, against the
// values of the instances the input reads, which that task instance then waits for.
type moduleInstance struct {
	path       string // "" for the root; module.NAME["KEY"], nested ones joined by dots
	flow       *config.Flow
	call       *config.ModuleCall // nil for the root
	key, value cty.Value          // the call's each.key and each.value, or NilVal
	parent     *moduleInstance

	scope      *config.Scope
	dynamic    map[string]bool              // variables whose input reads a task or a module output
	dynLocals  map[string]bool              // locals that read a dynamic variable or local
	tasks      map[string][]*Instance       // TYPE.NAME -> instances in key order
	calls      map[string][]*moduleInstance // call name -> instances in key order
	unexpanded map[string]bool              // TYPE.NAME or module.NAME: for_each has no value yet
	// deps memoises the task instances a variable, local or output reads ("var.x",
	// "local.y", "output.z"); a nil entry while it is being computed.
	deps map[string][]string
	// after are the instances the call's depends_on (and its callers') names: every
	// task instance in the module waits for them.
	after []string
}

func newModuleInstance(path string, flow *config.Flow, scope *config.Scope) *moduleInstance {
	return &moduleInstance{path: path, flow: flow, scope: scope, key: cty.NilVal, value: cty.NilVal,
		dynamic: map[string]bool{}, dynLocals: map[string]bool{}, tasks: map[string][]*Instance{},
		calls: map[string][]*moduleInstance{}, unexpanded: map[string]bool{}, deps: map[string][]string{}}
}

// addr puts a local address under the module instance's path.
func (m *moduleInstance) addr(local string) string {
	if m.path == "" {
		return local
	}
	return m.path + "." + local
}

// annotate names the module call in diagnostics that arose inside it.
func (m *moduleInstance) annotate(diags hcl.Diagnostics) hcl.Diagnostics {
	if m.call == nil || len(diags) == 0 {
		return diags
	}
	return config.InModule(diags, m.path, m.call.DeclRange)
}

// instantiate creates the instance of call (declared in parent) for one for_each
// element: its variables from the call's inputs, and its locals.
// Values that become sensitive in it are added to secrets, the scope that redacts.
func instantiate(parent *moduleInstance, call *config.ModuleCall, e config.Instance, secrets *config.Scope) (*moduleInstance, hcl.Diagnostics) {
	m := newModuleInstance(parent.addr(InstanceAddr(call.Addr(), e.Key)), call.Flow, nil)
	m.call, m.key, m.value, m.parent = call, e.Key, e.Value, parent
	var diags hcl.Diagnostics
	vars := map[string]cty.Value{}
	for name, v := range call.Flow.Variables {
		in, set := call.Inputs[name]
		switch {
		case !set && !v.HasDefault: // a missing input: Load reported it
			vars[name] = cty.UnknownVal(v.Type)
		case !set:
			vars[name], _ = v.Convert(v.Default)
		case len(call.InputRefs[name]) > 0 || parent.readsDynamic(in.Expr):
			m.dynamic[name] = true
			vars[name] = cty.UnknownVal(v.Type)
		default:
			val, d := in.Expr.Value(parent.scope.EvalContext(e.Key, e.Value))
			diags = append(diags, d...)
			conv, err := v.Convert(val)
			if err != nil && !d.HasErrors() {
				diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid value for module input",
					Detail:  fmt.Sprintf("The value for %s's variable %q does not match its type: %s.", m.path, name, err),
					Subject: in.Expr.Range().Ptr()})
			}
			vars[name] = conv
		}
	}
	diags = parent.annotate(diags)
	m.markDynamicLocals()
	scope, d := call.Flow.NewScope(vars)
	m.scope = scope
	addSecrets(secrets, vars) // a variable the module declares sensitive
	return m, append(diags, m.annotate(d)...)
}

// markDynamicLocals finds the locals that read dynamic variables, directly or not.
func (m *moduleInstance) markDynamicLocals() {
	if len(m.dynamic) == 0 {
		return
	}
	for changed := true; changed; {
		changed = false
		for name, l := range m.flow.Locals {
			if !m.dynLocals[name] && m.readsDynamic(l.Expr) {
				m.dynLocals[name], changed = true, true
			}
		}
	}
}

// readsDynamic reports whether expr reads a dynamic variable or local, whose value is
// known only once the tasks its input reads have run.
func (m *moduleInstance) readsDynamic(expr hcl.Expression) bool {
	if expr == nil || (len(m.dynamic) == 0 && len(m.dynLocals) == 0) {
		return false
	}
	for _, t := range expr.Variables() {
		root, name := scopeName(t)
		if (root == "var" && m.dynamic[name]) || (root == "local" && m.dynLocals[name]) {
			return true
		}
	}
	return false
}

// scopeName returns "var" or "local" and the name a traversal reads, or "".
func scopeName(t hcl.Traversal) (string, string) {
	root := t.RootName()
	if (root != "var" && root != "local") || len(t) < 2 {
		return "", ""
	}
	a, ok := t[1].(hcl.TraverseAttr)
	if !ok {
		return "", ""
	}
	return root, a.Name
}

// scopeDeps returns the task instances expr reads through dynamic variables and
// locals of m.
func (p *Plan) scopeDeps(m *moduleInstance, expr hcl.Expression) ([]string, hcl.Diagnostics) {
	if !m.readsDynamic(expr) {
		return nil, nil
	}
	var out []string
	var diags hcl.Diagnostics
	for _, t := range expr.Variables() {
		root, name := scopeName(t)
		if (root == "var" && m.dynamic[name]) || (root == "local" && m.dynLocals[name]) {
			d, dd := p.memoDeps(m, root+"."+name, t.SourceRange(), func() ([]string, hcl.Diagnostics) {
				if root == "local" {
					return p.scopeDeps(m, m.flow.Locals[name].Expr)
				}
				return p.inputDeps(m, name)
			})
			out, diags = append(out, d...), append(diags, dd...)
		}
	}
	return out, diags
}

// memoDeps computes the dependencies of one named value of m once.
func (p *Plan) memoDeps(m *moduleInstance, name string, rng hcl.Range, compute func() ([]string, hcl.Diagnostics)) ([]string, hcl.Diagnostics) {
	if d, ok := m.deps[name]; ok {
		if d == nil {
			p.cyclic = true
			return nil, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Cycle through a module",
				Detail:  fmt.Sprintf("%s in %s depends on itself through module inputs and outputs.", name, m.pathOrRoot()),
				Subject: rng.Ptr()}}
		}
		return d, nil
	}
	m.deps[name] = nil
	d, diags := compute()
	m.deps[name] = append([]string{}, d...)
	return d, diags
}

func (m *moduleInstance) pathOrRoot() string {
	if m.path == "" {
		return "the flow"
	}
	return m.path
}

// inputDeps returns the task instances a dynamic variable's input reads, as seen
// from the caller with the call's each.
func (p *Plan) inputDeps(m *moduleInstance, name string) ([]string, hcl.Diagnostics) {
	in := m.call.Inputs[name]
	out, diags := p.scopeDeps(m.parent, in.Expr)
	for _, r := range m.call.InputRefs[name] {
		res, d := p.resolve(m.parent, m.key, m.value, m.path, r, false)
		out, diags = append(out, res.insts...), append(diags, d...)
	}
	return out, diags
}

// outputDeps returns the task instances output name of m reads.
func (p *Plan) outputDeps(m *moduleInstance, name string) ([]string, hcl.Diagnostics) {
	o := findOutput(m.flow, name)
	if o == nil || o.Expr == nil {
		return nil, nil
	}
	return p.memoDeps(m, "output."+name, o.DeclRange, func() ([]string, hcl.Diagnostics) {
		out, diags := p.scopeDeps(m, o.Expr)
		for _, r := range o.Refs {
			res, d := p.resolve(m, cty.NilVal, cty.NilVal, m.addr("output."+name), r, false)
			out, diags = append(out, res.insts...), append(diags, d...)
		}
		return out, diags
	})
}

func findOutput(f *config.Flow, name string) *config.Output {
	for _, o := range f.Outputs {
		if o.Name == name {
			return o
		}
	}
	return nil
}

// allTasks lists every task instance in m and the modules it calls.
func (m *moduleInstance) allTasks() []string {
	var out []string
	for _, t := range m.flow.Tasks {
		out = append(out, addrs(m.tasks[t.Addr])...)
	}
	for _, c := range m.flow.Modules {
		for _, child := range m.calls[c.Name] {
			out = append(out, child.allTasks()...)
		}
	}
	return out
}

// context returns the scope of m with each set to key and value. When m has
// dynamic variables, they and the locals are evaluated from the caller against the
// values lookup gives for the instances they read.
func (p *Plan) context(m *moduleInstance, key, value cty.Value, lookup lookupFunc) (*hcl.EvalContext, hcl.Diagnostics) {
	if len(m.dynamic) == 0 {
		return m.scope.EvalContext(key, value), nil
	}
	parent, diags := p.context(m.parent, m.key, m.value, lookup)
	vars := make(map[string]cty.Value, len(m.scope.Vars))
	for name, v := range m.scope.Vars {
		vars[name] = v
	}
	for name := range m.dynamic {
		in := m.call.Inputs[name]
		refs := m.call.InputRefs[name]
		reads := make([]resolved, len(refs))
		for i, r := range refs {
			reads[i], _ = p.resolve(m.parent, m.key, m.value, m.path, r, false)
		}
		ctx := &hcl.EvalContext{Variables: copyVars(parent.Variables), Functions: parent.Functions}
		if !p.addRefValues(ctx, m.parent, refs, reads, lookup) {
			continue // stays unknown: an instance it reads has no value yet
		}
		val, d := in.Expr.Value(ctx)
		diags = append(diags, d...)
		if conv, err := m.flow.Variables[name].Convert(val); err == nil {
			vars[name] = conv
		} else if !d.HasErrors() {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid value for module input",
				Detail:  fmt.Sprintf("The value for %s's variable %q does not match its type: %s.", m.path, name, err),
				Subject: in.Expr.Range().Ptr()})
		}
	}
	scope, d := m.flow.NewScope(vars)
	addSecrets(p.Scope, vars)
	return scope.EvalContext(key, value), append(diags, m.annotate(d)...)
}

func copyVars(vars map[string]cty.Value) map[string]cty.Value {
	out := make(map[string]cty.Value, len(vars)+2)
	for k, v := range vars {
		out[k] = v
	}
	return out
}

// outputValue evaluates output o of module instance m over the values lookup gives.
// It reports false when an instance the output reads has no value.
func (p *Plan) outputValue(m *moduleInstance, o *config.Output, lookup lookupFunc) (cty.Value, bool) {
	ctx, diags := p.context(m, cty.NilVal, cty.NilVal, lookup)
	if diags.HasErrors() {
		return cty.NilVal, false
	}
	reads := make([]resolved, len(o.Refs))
	for i, r := range o.Refs {
		reads[i], _ = p.resolve(m, cty.NilVal, cty.NilVal, m.addr("output."+o.Name), r, false)
	}
	if !p.addRefValues(ctx, m, o.Refs, reads, lookup) {
		return cty.NilVal, false
	}
	v, d := o.Expr.Value(ctx)
	if d.HasErrors() {
		return cty.NilVal, false
	}
	if o.Sensitive {
		v = v.Mark(config.Sensitive)
	}
	return v, true
}

// moduleValue is what a reference reads from a module instance: its outputs, or only
// output attr when attr is set.
func (p *Plan) moduleValue(m *moduleInstance, attr string, lookup lookupFunc) (map[string]cty.Value, bool) {
	out := map[string]cty.Value{}
	for _, o := range m.flow.Outputs {
		if o.Expr == nil || (attr != "" && o.Name != attr) {
			continue
		}
		v, ok := p.outputValue(m, o, lookup)
		if !ok {
			return nil, false
		}
		out[o.Name] = v
	}
	return out, true
}

// sortedCalls returns a module instance's children in declaration and key order.
func (m *moduleInstance) children() []*moduleInstance {
	var out []*moduleInstance
	for _, c := range m.flow.Modules {
		out = append(out, m.calls[c.Name]...)
	}
	return out
}

func uniqueSorted(in []string) []string {
	if len(in) == 0 {
		return nil
	}
	sort.Strings(in)
	out := in[:0]
	for i, s := range in {
		if i == 0 || s != in[i-1] {
			out = append(out, s)
		}
	}
	return out
}

// addSecrets adds the text of every sensitive value of vars to what scope redacts.
func addSecrets(scope *config.Scope, vars map[string]cty.Value) {
	for _, v := range vars {
		if v.ContainsMarked() {
			scope.AddSecrets(v)
		}
	}
}
