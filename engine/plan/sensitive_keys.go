package plan

import (
	"maps"
	"slices"

	"github.com/zclconf/go-cty/cty"

	"github.com/flowdev/flow/engine/config"
	"github.com/flowdev/flow/tasks"
)

// A map attribute may name keys whose values are single-use secrets
// (tasks.Attribute.SensitiveKeys: an LXD remote's trust_token). Their values are
// marked sensitive when evaluated, so logs redact them and dependents see them
// marked; they are never recorded and never fingerprinted, so the record of the
// object holds the rest of the map (the remote's address and certificate paths) for
// undo and refresh, and a fresh token re-runs nothing.

// markSensitiveKeys returns v with the values of a's sensitive keys marked.
func markSensitiveKeys(a tasks.Attribute, v cty.Value) cty.Value {
	return mapKeys(a, v, func(k string, e cty.Value) (cty.Value, bool) {
		if slices.Contains(a.SensitiveKeys, k) {
			return e.Mark(config.Sensitive), true
		}
		return e, true
	})
}

// WithoutSensitiveKeys returns inputs with the sensitive keys of each attribute's map
// left out; inputs itself is not changed.
func WithoutSensitiveKeys(attrs []tasks.Attribute, inputs map[string]cty.Value) map[string]cty.Value {
	var out map[string]cty.Value
	for _, a := range attrs {
		v, ok := inputs[a.Name]
		if !ok || len(a.SensitiveKeys) == 0 {
			continue
		}
		if out == nil {
			out = maps.Clone(inputs)
		}
		out[a.Name] = withoutKeys(a, v)
	}
	if out == nil {
		return inputs
	}
	return out
}

// withoutKeys is v without a's sensitive keys.
func withoutKeys(a tasks.Attribute, v cty.Value) cty.Value {
	return mapKeys(a, v, func(k string, e cty.Value) (cty.Value, bool) {
		return e, !slices.Contains(a.SensitiveKeys, k)
	})
}

// mapKeys rebuilds the known, non-null map v through f, which may change or drop
// each element; any other value is returned as it is. v's own marks are kept.
func mapKeys(a tasks.Attribute, v cty.Value, f func(string, cty.Value) (cty.Value, bool)) cty.Value {
	if len(a.SensitiveKeys) == 0 || !v.Type().IsMapType() || v.IsNull() || !v.IsKnown() {
		return v
	}
	plain, marks := v.Unmark()
	if !plain.IsKnown() || plain.IsNull() {
		return v
	}
	elems := make(map[string]cty.Value, plain.LengthInt())
	for it := plain.ElementIterator(); it.Next(); {
		k, e := it.Element()
		if ne, keep := f(k.AsString(), e); keep {
			elems[k.AsString()] = ne
		}
	}
	out := cty.MapValEmpty(v.Type().ElementType())
	if len(elems) > 0 {
		out = cty.MapVal(elems)
	}
	return out.WithMarks(marks)
}
