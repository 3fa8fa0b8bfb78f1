package config

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"

	"github.com/flowdev/flow/tasks"
)

// ModuleCall is a `module "NAME"` block: a directory of flow files with its own
// variables, locals, tasks, outputs and module calls, called with inputs once, or once
// per for_each element. The engine expands calls at plan time; its tasks are addressed
// under the call, as module.NAME["KEY"].TYPE.NAME.
type ModuleCall struct {
	Name   string
	Source string // as written: a directory relative to the calling flow's
	// Flow is the loaded module; nil when its files could not be read.
	Flow    *Flow
	ForEach hcl.Expression // nil without for_each
	// Inputs are the module's variables as set by the call, evaluated in the caller's
	// scope, per instance of the call.
	Inputs hcl.Attributes
	// InputRefs are the task and module references of each input.
	InputRefs map[string][]Ref
	DependsOn []Ref
	dependsOn []hcl.Expression
	DeclRange hcl.Range
}

// Addr is module.NAME.
func (m *ModuleCall) Addr() string { return "module." + m.Name }

// HasOutput reports whether the called module declares output name.
func (m *ModuleCall) HasOutput(name string) bool {
	if m.Flow == nil {
		return true // not loaded: already reported
	}
	for _, o := range m.Flow.Outputs {
		if o.Name == name {
			return true
		}
	}
	return false
}

// InModule adds to each diagnostic, which arose inside module call addr, the call and
// where it is made, so a mistake in a module file also names the use that exposed it.
func InModule(diags hcl.Diagnostics, addr string, call hcl.Range) hcl.Diagnostics {
	for _, d := range diags {
		d.Detail = strings.TrimSpace(fmt.Sprintf("%s (in %s, called at %s)", d.Detail, addr, call))
	}
	return diags
}

var moduleMetaSchema = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{
	{Name: "source", Required: true}, {Name: "for_each"}, {Name: "depends_on"},
}}

// decodeModule decodes a module call and loads the module it names. stack holds the
// directories of the calls that led here, so a module that calls itself is reported
// instead of loaded forever.
func (f *Flow) decodeModule(b *hcl.Block, reg *tasks.Registry, stack []string) hcl.Diagnostics {
	m := &ModuleCall{Name: b.Labels[0], DeclRange: b.DefRange, InputRefs: map[string][]Ref{}}
	var diags hcl.Diagnostics
	if !hclsyntax.ValidIdentifier(m.Name) {
		diags = append(diags, errorf(b.LabelRanges[0], "Invalid module name", "%q is not a valid identifier.", m.Name))
	}
	if prev, dup := f.moduleIndex[m.Name]; dup {
		return append(diags, errorf(b.LabelRanges[0], "Duplicate module call",
			"Module %q is called twice: first at %s, again here.", m.Name, prev.DeclRange))
	}
	f.moduleIndex[m.Name] = m
	f.Modules = append(f.Modules, m)
	meta, remain, d := b.Body.PartialContent(moduleMetaSchema)
	diags = append(diags, d...)
	inputs, d := remain.JustAttributes()
	diags = append(diags, d...)
	m.Inputs = inputs
	if a, ok := meta.Attributes["for_each"]; ok {
		m.ForEach = a.Expr
	}
	if a, ok := meta.Attributes["depends_on"]; ok {
		exprs, d := hcl.ExprList(a.Expr)
		diags = append(diags, d...)
		m.dependsOn = exprs
	}
	a, ok := meta.Attributes["source"]
	if !ok {
		return diags
	}
	dir, d := moduleDir(f.givenDir, a)
	diags = append(diags, d...)
	if d.HasErrors() {
		return diags
	}
	m.Source = dir
	abs, err := filepath.Abs(dir)
	if err != nil {
		abs = dir
	}
	for _, s := range stack {
		if s == abs {
			return append(diags, errorf(a.Expr.Range(), "Module calls itself",
				"Module %q (%s) is the module this call is in, or one that calls it.", m.Name, dir))
		}
	}
	child, d := load(dir, f.WorkDir, reg, append(stack, abs))
	if child == nil {
		detail := "no .hcl files"
		if len(d) > 0 {
			detail = d[0].Detail
		}
		return append(diags, errorf(a.Expr.Range(), "Cannot read module", "%s.", detail))
	}
	diags = append(diags, InModule(d, m.Addr(), m.DeclRange)...)
	m.Flow = child
	for name, file := range child.Files {
		f.Files[name] = file
	}
	return append(diags, m.checkInputs(remain, b)...)
}

// moduleDir reads source, a literal path starting with ./ or ../, relative to dir.
func moduleDir(dir string, a *hcl.Attribute) (string, hcl.Diagnostics) {
	v, diags := a.Expr.Value(nil)
	if diags.HasErrors() || v.Type() != cty.String || v.IsNull() {
		return "", append(diags, errorf(a.Expr.Range(), "Invalid module source",
			"source is a literal directory path such as \"./modules/member\"."))
	}
	src := v.AsString()
	if !strings.HasPrefix(src, "./") && !strings.HasPrefix(src, "../") {
		return "", hcl.Diagnostics{errorf(a.Expr.Range(), "Invalid module source",
			"source %q must start with ./ or ../: a directory relative to this flow's.", src)}
	}
	return filepath.Join(dir, src), nil
}

// checkInputs checks the call's inputs against the module's variables: each input
// sets a declared variable, and each variable without a default is set.
func (m *ModuleCall) checkInputs(body hcl.Body, b *hcl.Block) hcl.Diagnostics {
	var diags hcl.Diagnostics
	vars := m.Flow.Variables
	for _, name := range keys(m.Inputs) {
		if _, ok := vars[name]; !ok {
			diags = append(diags, errorf(m.Inputs[name].NameRange, "Unsupported module input",
				"Module %q (%s) declares no variable %q.%s", m.Name, m.Source, name, suggest(name, keys(vars))))
		}
	}
	for _, name := range keys(vars) {
		if _, set := m.Inputs[name]; !set && !vars[name].HasDefault {
			diags = append(diags, errorf(b.DefRange, "Missing module input",
				"Module %q requires variable %q (declared at %s), which has no default.", m.Name, name, vars[name].DeclRange))
		}
	}
	return diags
}

// checkModule checks a call's expressions and records its references.
func (f *Flow) checkModule(m *ModuleCall, reg *tasks.Registry) hcl.Diagnostics {
	var diags hcl.Diagnostics
	hasEach := m.ForEach != nil
	if hasEach {
		diags = append(diags, f.checkStatic(m.ForEach, "Task reference in for_each",
			"for_each must be known before the run starts, so it may use variables and locals but not %s.")...)
	}
	for _, name := range keys(m.Inputs) {
		refs, d := f.scanChecked(m.Inputs[name].Expr, hasEach)
		diags = append(diags, d...)
		diags = append(diags, f.checkRefs(refs, reg)...)
		m.InputRefs[name] = refs
	}
	refs, d := f.checkDependsOn(m.dependsOn, hasEach)
	m.DependsOn = refs
	diags = append(diags, d...)
	return append(diags, f.checkRefs(m.DependsOn, reg)...)
}

// checkModuleRef checks module.NAME, module.NAME[KEY] and module.NAME[KEY].OUTPUT.
func (f *Flow) checkModuleRef(r Ref) hcl.Diagnostics {
	m, ok := f.moduleIndex[r.Name]
	switch {
	case !ok:
		return hcl.Diagnostics{errorf(r.Range, "Reference to undeclared module",
			"No module %q is called.%s", r.Name, suggest(r.Name, keys(f.moduleIndex)))}
	case m.ForEach == nil && r.Keyed():
		return hcl.Diagnostics{errorf(r.Range, "Unexpected instance key",
			"Module call %s has no for_each, so it is referred to without a key.", r.Addr)}
	case m.ForEach != nil && !r.Keyed() && r.Attr != "":
		return hcl.Diagnostics{errorf(r.Range, "Missing instance key",
			"Module call %s has for_each; refer to one instance as %s[KEY].%s.", r.Addr, r.Addr, r.Attr)}
	case r.Attr != "" && !m.HasOutput(r.Attr):
		var names []string
		for _, o := range m.Flow.Outputs {
			names = append(names, o.Name)
		}
		return hcl.Diagnostics{errorf(r.Range, "Unsupported attribute",
			"Module %q has no output %q.%s", r.Name, r.Attr, suggest(r.Attr, names))}
	}
	return nil
}

// TaskBlocks counts the task blocks of the flow and of the modules it calls, each
// called module once per call, however many instances the call has.
func (f *Flow) TaskBlocks() int {
	n := len(f.Tasks)
	for _, m := range f.Modules {
		if m.Flow != nil {
			n += m.Flow.TaskBlocks()
		}
	}
	return n
}
