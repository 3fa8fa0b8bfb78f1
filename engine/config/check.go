package config

import (
	"sort"

	"github.com/hashicorp/hcl/v2"

	"github.com/flowdev/flow/tasks"
)

// checkReferences scans every expression once, records each task's references, and
// reports references to anything undeclared on the reference's own range.
func (f *Flow) checkReferences(reg *tasks.Registry) hcl.Diagnostics {
	var diags hcl.Diagnostics
	for _, l := range f.sortedLocals() {
		diags = append(diags, f.checkStatic(l.Expr, "Task reference in a local value",
			"Local values are computed before any task runs, so they cannot read %s. Use the reference in the task itself.")...)
	}
	for _, t := range f.Tasks {
		diags = append(diags, f.checkTask(t, reg)...)
	}
	for _, m := range f.Modules {
		diags = append(diags, f.checkModule(m, reg)...)
	}
	for _, o := range f.Outputs {
		if o.Expr == nil {
			continue
		}
		refs, d := f.scanChecked(o.Expr, false)
		diags = append(diags, d...)
		diags = append(diags, f.checkRefs(refs, reg)...)
		o.Refs = refs
	}
	f.markRead()
	return diags
}

// markRead sets Read on every task that a task, a module call's input or an output
// reads; depends_on alone reads nothing.
func (f *Flow) markRead() {
	read := func(refs []Ref) {
		for _, r := range refs {
			if t, ok := f.Task(r.Addr); ok && !r.IsModule() {
				t.Read = true
			}
		}
	}
	for _, t := range f.Tasks {
		read(t.Refs)
	}
	for _, m := range f.Modules {
		for _, refs := range m.InputRefs {
			read(refs)
		}
	}
	for _, o := range f.Outputs {
		read(o.Refs)
	}
}

func (f *Flow) checkTask(t *Task, reg *tasks.Registry) hcl.Diagnostics {
	var diags hcl.Diagnostics
	hasEach := t.ForEach != nil
	if t.ForEach != nil {
		diags = append(diags, f.checkStatic(t.ForEach, "Task reference in for_each",
			"for_each must be known before the run starts, so it may use variables and locals but not %s.")...)
	}
	for _, e := range t.Exprs() {
		refs, d := f.scanChecked(e, hasEach)
		diags = append(diags, d...)
		t.Refs = append(t.Refs, refs...)
		t.ReadsEach = t.ReadsEach || readsEach(e)
	}
	refs, d := f.checkDependsOn(t.dependsOn, hasEach)
	t.DependsOn = refs
	diags = append(diags, d...)
	diags = append(diags, f.checkRefs(t.Refs, reg)...)
	diags = append(diags, f.checkRefs(t.DependsOn, reg)...)
	return diags
}

// readsEach reports whether expr refers to each.key or each.value.
func readsEach(expr hcl.Expression) bool {
	for _, t := range expr.Variables() {
		if t.RootName() == "each" {
			return true
		}
	}
	return false
}

// checkDependsOn reads depends_on entries: each names a task, a module call, or one
// instance of either.
func (f *Flow) checkDependsOn(exprs []hcl.Expression, hasEach bool) ([]Ref, hcl.Diagnostics) {
	var out []Ref
	var diags hcl.Diagnostics
	for _, e := range exprs {
		refs, d := f.scanChecked(e, hasEach)
		diags = append(diags, d...)
		if len(refs) != 1 || refs[0].Attr != "" || refs[0].Range != e.Range() {
			diags = append(diags, errorf(e.Range(), "Invalid depends_on entry",
				"Each depends_on entry names a task, a module call or one instance: TYPE.NAME, TYPE.NAME[\"KEY\"], TYPE.NAME[each.key] or module.NAME[KEY]."))
			continue
		}
		out = append(out, refs[0])
	}
	return out, diags
}

// scanChecked scans expr for task references and checks its var.*, local.*, each.*
// and path.* traversals.
func (f *Flow) scanChecked(expr hcl.Expression, eachAllowed bool) ([]Ref, hcl.Diagnostics) {
	refs, others, diags := scan(expr)
	return refs, append(diags, f.checkOthers(others, eachAllowed)...)
}

// checkStatic checks an expression evaluated before any task runs: every task
// reference in it is an error, with detail naming the reference (%s).
func (f *Flow) checkStatic(expr hcl.Expression, summary, detail string) hcl.Diagnostics {
	refs, diags := f.scanChecked(expr, false)
	for _, r := range refs {
		diags = append(diags, errorf(r.Range, summary, detail, r.Addr))
	}
	return diags
}

// checkOthers checks var.*, local.*, each.* and path.* traversals.
func (f *Flow) checkOthers(travs []hcl.Traversal, eachAllowed bool) hcl.Diagnostics {
	var diags hcl.Diagnostics
	for _, t := range travs {
		rng := t.SourceRange()
		attr := ""
		if len(t) > 1 {
			if a, ok := t[1].(hcl.TraverseAttr); ok {
				attr = a.Name
			}
		}
		switch t.RootName() {
		case "var":
			if _, ok := f.Variables[attr]; !ok {
				diags = append(diags, errorf(rng, "Reference to undeclared variable",
					"No variable %q is declared.%s", attr, suggest(attr, keys(f.Variables))))
			}
		case "local":
			if _, ok := f.Locals[attr]; !ok {
				diags = append(diags, errorf(rng, "Reference to undeclared local value",
					"No local value %q is defined.%s", attr, suggest(attr, keys(f.Locals))))
			}
		case "each":
			if !eachAllowed {
				diags = append(diags, errorf(rng, "each outside for_each",
					"each.key and each.value exist only in a task that sets for_each."))
			} else if attr != "key" && attr != "value" {
				diags = append(diags, errorf(rng, "Invalid each attribute", "each has only key and value."))
			}
		case "path":
			if attr != "flow" && attr != "cwd" {
				diags = append(diags, errorf(rng, "Invalid path attribute",
					"path has flow (the flow's directory) and cwd (the current directory)."))
			}
		}
	}
	return diags
}

// checkRefs checks task references: the task exists, the key form matches its
// for_each, and the attribute is one of its inputs or outputs.
func (f *Flow) checkRefs(refs []Ref, reg *tasks.Registry) hcl.Diagnostics {
	var diags hcl.Diagnostics
	for _, r := range refs {
		if r.Name == "" || r.Invalid {
			continue // traversalRef already reported it
		}
		if r.Type == ModuleRoot {
			diags = append(diags, f.checkModuleRef(r)...)
			continue
		}
		if _, ok := reg.Lookup(r.Type); !ok && !f.declaresType(r.Type) {
			diags = append(diags, errorf(r.Range, "Unknown reference",
				"%q is neither var, local, each, path, module nor a task type.%s", r.Type, suggest(r.Type, reg.Names())))
			continue
		}
		t, ok := f.taskIndex[r.Addr]
		if !ok {
			diags = append(diags, errorf(r.Range, "Reference to undeclared task",
				"No task %q %q is declared.%s", r.Type, r.Name, suggest(r.Addr, keys(f.taskIndex))))
			continue
		}
		switch {
		case t.ForEach == nil && r.Keyed():
			diags = append(diags, errorf(r.Range, "Unexpected instance key",
				"Task %s has no for_each, so it is referred to without a key.", r.Addr))
		case t.ForEach != nil && !r.Keyed() && r.Attr != "":
			diags = append(diags, errorf(r.Range, "Missing instance key",
				"Task %s has for_each; refer to one instance as %s[KEY].%s.", r.Addr, r.Addr, r.Attr))
		case r.Attr != "" && t.Kind != nil && !hasAttr(t.Kind, t.Attrs, r.Attr):
			diags = append(diags, errorf(r.Range, "Unsupported attribute",
				"Task type %q has no attribute or output %q.%s", t.Type, r.Attr, suggest(r.Attr, attrNames(t.Kind, t.Attrs))))
		}
	}
	return diags
}

func (f *Flow) declaresType(typ string) bool {
	for _, t := range f.Tasks {
		if t.Type == typ {
			return true
		}
	}
	return false
}

func hasAttr(kind *tasks.Type, attrs []tasks.Attribute, name string) bool {
	for _, n := range attrNames(kind, attrs) {
		if n == name {
			return true
		}
	}
	return false
}

func attrNames(kind *tasks.Type, attrs []tasks.Attribute) []string {
	var names []string
	for _, a := range attrs {
		names = append(names, a.Name)
	}
	for _, o := range kind.Outputs {
		names = append(names, o.Name)
	}
	return names
}

func (f *Flow) sortedLocals() []*Local {
	out := make([]*Local, 0, len(f.Locals))
	for _, name := range keys(f.Locals) {
		out = append(out, f.Locals[name])
	}
	return out
}

func sortedAttributes(attrs hcl.Attributes) []*hcl.Attribute {
	out := make([]*hcl.Attribute, 0, len(attrs))
	for _, name := range keys(attrs) {
		out = append(out, attrs[name])
	}
	return out
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
