package config

import (
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
)

// Ref is one reference from an expression to a task or, with Type "module", to a
// module call (Name the call, Attr the output): TYPE.NAME (every instance),
// TYPE.NAME["key"] (a literal key), or TYPE.NAME[EXPR] where EXPR, such as each.key, is
// evaluated per instance. That last form is what lets one member's chain wait only on
// the same member's upstream instance.
type Ref struct {
	Type    string
	Name    string
	Addr    string         // TYPE.NAME
	Key     cty.Value      // literal key, or cty.NilVal
	KeyExpr hcl.Expression // per-instance key, or nil
	Attr    string         // the attribute read from the instance, "" if none
	Range   hcl.Range
	// Invalid marks a reference already reported as malformed (its key is no
	// string); it is checked no further, and reads an unknown value.
	Invalid bool
}

// ModuleRoot is the root of a reference to a module call's outputs: module.NAME.OUTPUT.
const ModuleRoot = "module"

// IsModule reports whether r refers to a module call rather than a task.
func (r Ref) IsModule() bool { return r.Type == ModuleRoot }

// Keyed reports whether the reference names one instance rather than all of them.
func (r Ref) Keyed() bool { return r.Key != cty.NilVal || r.KeyExpr != nil }

// reservedRoots are the variable roots that are not task types.
var reservedRoots = map[string]bool{"var": true, "local": true, "each": true, "path": true}

// scan splits the free variables of expr into task references and other traversals
// (var.*, local.*, each.*, path.*). Names bound by for expressions are not free, so
// they are never mistaken for task types.
func scan(expr hcl.Expression) (refs []Ref, others []hcl.Traversal, diags hcl.Diagnostics) {
	free := map[hcl.Pos]hcl.Traversal{}
	for _, t := range expr.Variables() {
		if reservedRoots[t.RootName()] {
			others = append(others, t)
			continue
		}
		free[t.SourceRange().Start] = t
	}
	if len(free) == 0 {
		return nil, others, nil
	}
	syn, ok := expr.(hclsyntax.Expression)
	if !ok { // not native syntax: traversals are all we know
		for _, t := range free {
			r, d := traversalRef(t)
			refs, diags = append(refs, r), append(diags, d...)
		}
		return refs, others, diags
	}
	handled := map[*hclsyntax.ScopeTraversalExpr]bool{}
	isFreeTask := func(e hclsyntax.Expression) *hclsyntax.ScopeTraversalExpr {
		st, ok := e.(*hclsyntax.ScopeTraversalExpr)
		if !ok || len(st.Traversal) != 2 {
			return nil
		}
		if _, ok := free[st.Traversal.SourceRange().Start]; !ok {
			return nil
		}
		return st
	}
	hclsyntax.VisitAll(syn, func(n hclsyntax.Node) hcl.Diagnostics {
		switch n := n.(type) {
		case *hclsyntax.RelativeTraversalExpr:
			ix, ok := n.Source.(*hclsyntax.IndexExpr)
			if !ok {
				return nil
			}
			if st := isFreeTask(ix.Collection); st != nil && !handled[st] {
				handled[st] = true
				r, d := traversalRef(st.Traversal)
				r.KeyExpr, r.Range = ix.Key, n.SrcRange
				if a, ok := n.Traversal[0].(hcl.TraverseAttr); ok {
					r.Attr = a.Name
				}
				refs, diags = append(refs, r), append(diags, d...)
			}
		case *hclsyntax.IndexExpr:
			if st := isFreeTask(n.Collection); st != nil && !handled[st] {
				handled[st] = true
				r, d := traversalRef(st.Traversal)
				r.KeyExpr, r.Range = n.Key, n.SrcRange
				refs, diags = append(refs, r), append(diags, d...)
			}
		case *hclsyntax.ScopeTraversalExpr:
			if _, ok := free[n.Traversal.SourceRange().Start]; ok && !handled[n] {
				handled[n] = true
				r, d := traversalRef(n.Traversal)
				refs, diags = append(refs, r), append(diags, d...)
			}
		}
		return nil
	})
	return refs, others, diags
}

// traversalRef reads TYPE.NAME, TYPE.NAME.ATTR, TYPE.NAME["k"] or TYPE.NAME["k"].ATTR.
func traversalRef(t hcl.Traversal) (Ref, hcl.Diagnostics) {
	r := Ref{Type: t.RootName(), Range: t.SourceRange()}
	if len(t) < 2 {
		return r, hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "Invalid reference",
			Detail:   "A reference to a task has the form TYPE.NAME, TYPE.NAME.ATTR or TYPE.NAME[KEY].ATTR.",
			Subject:  r.Range.Ptr(),
		}}
	}
	name, ok := t[1].(hcl.TraverseAttr)
	if !ok {
		return r, hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "Invalid reference",
			Detail:   "A task type must be followed by the task's name: TYPE.NAME.",
			Subject:  t[1].SourceRange().Ptr(),
		}}
	}
	r.Name, r.Addr = name.Name, r.Type+"."+name.Name
	rest := t[2:]
	if len(rest) > 0 {
		if ix, ok := rest[0].(hcl.TraverseIndex); ok {
			// exec.a[1] means key "1", as indexing an object does; keys are strings.
			key, err := convert.Convert(ix.Key, cty.String)
			if err != nil || key.IsNull() {
				return Ref{Type: r.Type, Name: r.Name, Addr: r.Addr, Range: r.Range, Invalid: true}, hcl.Diagnostics{{
					Severity: hcl.DiagError, Summary: "Invalid instance key",
					Detail:  "An instance key is a string, as in TYPE.NAME[\"KEY\"].",
					Subject: ix.SourceRange().Ptr(),
				}}
			}
			r.Key, rest = key, rest[1:]
		}
	}
	if len(rest) > 0 {
		if a, ok := rest[0].(hcl.TraverseAttr); ok {
			r.Attr = a.Name
		}
	}
	return r, nil
}
