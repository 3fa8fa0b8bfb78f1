package config

import (
	"fmt"
	"github.com/flowdev/flow/tasks"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
)

// Sensitive marks values derived from sensitive variables. The engine keeps such values
// out of logs and state.
const Sensitive = tasks.SensitiveMark

// Scope holds what is known before any task runs: variables, locals and functions.
// It is safe for concurrent use; only its secrets grow after it is built, when a
// task publishes a sensitive output (AddSecrets).
type Scope struct {
	Vars      map[string]cty.Value
	Locals    map[string]cty.Value
	Functions map[string]function.Function
	// Secrets are the text forms of every sensitive value, longest first, for
	// redaction. Read them through Redact once tasks run.
	Secrets   []string
	secretsMu sync.RWMutex
	path      cty.Value
}

// AddSecrets adds the text forms of v's sensitive parts (a task's sensitive
// output, such as a join token) to what Redact replaces.
func (s *Scope) AddSecrets(v cty.Value) {
	s.secretsMu.Lock()
	defer s.secretsMu.Unlock()
	s.Secrets = appendSecrets(s.Secrets, v)
	sort.Slice(s.Secrets, func(i, j int) bool {
		if len(s.Secrets[i]) != len(s.Secrets[j]) {
			return len(s.Secrets[i]) > len(s.Secrets[j])
		}
		return s.Secrets[i] < s.Secrets[j]
	})
	s.Secrets = slices.Compact(s.Secrets) // a module's variable is added once per task that reads it
}

// NewScope evaluates the locals (in dependency order) over the assigned variables.
func (f *Flow) NewScope(vars map[string]cty.Value) (*Scope, hcl.Diagnostics) {
	s := &Scope{
		Vars: vars, Locals: map[string]cty.Value{}, Functions: Functions(f.Dir),
		path: cty.ObjectVal(map[string]cty.Value{"flow": cty.StringVal(f.Dir), "cwd": cty.StringVal(f.WorkDir)}),
	}
	for _, v := range vars {
		s.Secrets = appendSecrets(s.Secrets, v)
	}
	sort.Slice(s.Secrets, func(i, j int) bool { return len(s.Secrets[i]) > len(s.Secrets[j]) })
	var diags hcl.Diagnostics
	state := map[string]int{} // 0 new, 1 visiting, 2 done
	var visit func(name string, path []string) bool
	visit = func(name string, path []string) bool {
		l := f.Locals[name]
		switch state[name] {
		case 2:
			return true
		case 1:
			diags = append(diags, errorf(l.DeclRange, "Cycle in local values", "%s.",
				"local."+strings.Join(append(path, name), " -> local.")))
			return false
		}
		state[name] = 1
		ok := true
		for _, t := range l.Expr.Variables() {
			if t.RootName() != "local" || len(t) < 2 {
				continue
			}
			if a, isAttr := t[1].(hcl.TraverseAttr); isAttr && f.Locals[a.Name] != nil {
				ok = visit(a.Name, append(path, name)) && ok
			}
		}
		state[name] = 2
		if !ok { // on a cycle: already reported; evaluating would only add confusing errors
			s.Locals[name] = cty.DynamicVal
			return false
		}
		val, d := l.Expr.Value(s.EvalContext(cty.NilVal, cty.NilVal))
		diags = append(diags, d...)
		s.Locals[name] = val
		return true
	}
	for _, name := range keys(f.Locals) {
		visit(name, nil)
	}
	return s, diags
}

// EvalContext returns a context with var, local, path and, when key is not NilVal, each.
// Callers add task values to the returned context's Variables.
func (s *Scope) EvalContext(key, value cty.Value) *hcl.EvalContext {
	vars := map[string]cty.Value{
		"var":   cty.ObjectVal(s.Vars),
		"local": cty.ObjectVal(s.Locals),
		"path":  s.path,
	}
	if key != cty.NilVal {
		vars["each"] = cty.ObjectVal(map[string]cty.Value{"key": key, "value": value})
	}
	return &hcl.EvalContext{Variables: vars, Functions: s.Functions}
}

// Redact replaces every secret in text with "(sensitive)".
func (s *Scope) Redact(text string) string {
	s.secretsMu.RLock()
	defer s.secretsMu.RUnlock()
	for _, sec := range s.Secrets {
		text = strings.ReplaceAll(text, sec, "(sensitive)")
	}
	return text
}

// minSecretLen keeps trivial values such as "1" or "yes" from redacting unrelated text.
const minSecretLen = 4

func appendSecrets(out []string, v cty.Value) []string {
	if !v.ContainsMarked() {
		return out
	}
	v, _ = v.UnmarkDeep()
	if v.IsNull() || !v.IsKnown() {
		return out
	}
	switch {
	case v.Type().IsPrimitiveType():
		var text string
		switch v.Type() {
		case cty.String:
			text = v.AsString()
		case cty.Number:
			text = v.AsBigFloat().Text('f', -1)
		default:
			text = fmt.Sprint(v.True())
		}
		if len(text) >= minSecretLen {
			out = append(out, text)
		}
	case v.CanIterateElements():
		for it := v.ElementIterator(); it.Next(); {
			_, e := it.Element()
			out = appendSecrets(out, e.Mark(Sensitive))
		}
	}
	return out
}

// Instance is one expansion of a task: its key and value under for_each, or NilVal
// for both without for_each.
type Instance struct {
	Key   cty.Value
	Value cty.Value
}

// Expand evaluates t's for_each: a map, an object, or a set of strings. Keys come out
// sorted. Without for_each it returns one instance with NilVal key.
func (s *Scope) Expand(t *Task) ([]Instance, hcl.Diagnostics) {
	return s.ExpandForEach(t.ForEach)
}

// ExpandForEach evaluates a task's or a module call's for_each expression (nil
// without for_each), as Expand does.
func (s *Scope) ExpandForEach(forEach hcl.Expression) ([]Instance, hcl.Diagnostics) {
	if forEach == nil {
		return []Instance{{Key: cty.NilVal, Value: cty.NilVal}}, nil
	}
	val, diags := forEach.Value(s.EvalContext(cty.NilVal, cty.NilVal))
	if diags.HasErrors() {
		return nil, diags
	}
	rng := forEach.Range()
	ty := val.Type()
	notExpanded := hcl.Diagnostics{{Severity: hcl.DiagWarning, Summary: "for_each not expanded",
		Detail:  "for_each depends on a variable that has no value yet, so its instances are not checked.",
		Subject: rng.Ptr()}}
	sensitive := hcl.Diagnostics{errorf(rng, "Invalid for_each", "for_each keys become part of task addresses, so they cannot be sensitive.")}
	// Elements are checked as they are read: walking a large value first costs as much
	// as reading it.
	switch {
	case val.IsNull():
		return nil, hcl.Diagnostics{errorf(rng, "Invalid for_each", "for_each is null; give a map or a set of strings.")}
	case !val.IsKnown(): // only when checking without variable values
		return nil, notExpanded
	case val.IsMarked():
		return nil, sensitive
	case ty.IsMapType() || ty.IsObjectType():
		out := make([]Instance, 0, val.LengthInt())
		for it := val.ElementIterator(); it.Next(); {
			k, v := it.Element()
			out = append(out, Instance{Key: k, Value: v}) // a value may be sensitive; its key cannot
		}
		sort.Slice(out, func(i, j int) bool { return out[i].Key.AsString() < out[j].Key.AsString() })
		return out, nil
	case ty.IsSetType() && val.LengthInt() == 0: // toset([]) has no element type
		return []Instance{}, nil
	case ty.IsSetType() && ty.ElementType() == cty.String:
		out := make([]Instance, 0, val.LengthInt())
		for it := val.ElementIterator(); it.Next(); {
			_, v := it.Element()
			switch {
			case !v.IsKnown():
				return nil, notExpanded
			case v.IsMarked():
				return nil, sensitive
			case v.IsNull():
				return nil, hcl.Diagnostics{errorf(rng, "Invalid for_each", "for_each set has a null element.")}
			}
			out = append(out, Instance{Key: v, Value: v})
		}
		return out, nil
	default:
		return nil, hcl.Diagnostics{errorf(rng, "Invalid for_each",
			"for_each needs a map or a set of strings, not %s; a list can be converted with toset().", ty.FriendlyName())}
	}
}
