package plugin

import (
	"fmt"

	"github.com/zclconf/go-cty/cty"
	ctyjson "github.com/zclconf/go-cty/cty/json"

	pluginpb "github.com/flowdev/flow/plugin/sdk/proto"
	"github.com/flowdev/flow/tasks"
)

// EncodeType is t as cty type JSON.
func EncodeType(t cty.Type) ([]byte, error) {
	return ctyjson.MarshalType(t)
}

// DecodeType reads cty type JSON.
func DecodeType(b []byte) (cty.Type, error) {
	t, err := ctyjson.UnmarshalType(b)
	if err != nil {
		return cty.NilType, fmt.Errorf("type %s: %w", b, err)
	}
	return t, nil
}

// EncodeAttributes encodes values of the attributes attrs declares, each as cty JSON of
// its type; marks are dropped (the host redacts, the plugin needs the plain value). A
// missing value is left out: the other side reads it as null.
func EncodeAttributes(attrs []tasks.Attribute, values map[string]cty.Value) (map[string][]byte, error) {
	out := make(map[string][]byte, len(values))
	for _, a := range attrs {
		v, ok := values[a.Name]
		if !ok {
			continue
		}
		v, _ = v.UnmarkDeep()
		js, err := ctyjson.Marshal(v, a.Type)
		if err != nil {
			return nil, fmt.Errorf("attribute %q: %w", a.Name, err)
		}
		out[a.Name] = js
	}
	return out, nil
}

// DecodeAttributes decodes what EncodeAttributes wrote; an attribute that is not in
// in is null.
func DecodeAttributes(attrs []tasks.Attribute, in map[string][]byte) (map[string]cty.Value, error) {
	out := make(map[string]cty.Value, len(attrs))
	for _, a := range attrs {
		js, ok := in[a.Name]
		if !ok {
			out[a.Name] = cty.NullVal(a.Type)
			continue
		}
		v, err := ctyjson.Unmarshal(js, a.Type)
		if err != nil {
			return nil, fmt.Errorf("attribute %q: %w", a.Name, err)
		}
		out[a.Name] = v
	}
	return out, nil
}

// EncodeOutputs encodes outputs of the types decl declares. A value marked
// tasks.SensitiveMark travels with sensitive set. An output decl does not declare is
// an error: the other side could not type it.
func EncodeOutputs(decl []tasks.Output, outputs tasks.Outputs) (map[string]*pluginpb.Value, error) {
	types := make(map[string]cty.Type, len(decl))
	for _, o := range decl {
		types[o.Name] = o.Type
	}
	out := make(map[string]*pluginpb.Value, len(outputs))
	for name, v := range outputs {
		ty, ok := types[name]
		if !ok {
			return nil, fmt.Errorf("output %q is not declared", name)
		}
		sensitive := v.ContainsMarked()
		plain, _ := v.UnmarkDeep()
		js, err := ctyjson.Marshal(plain, ty)
		if err != nil {
			return nil, fmt.Errorf("output %q: %w", name, err)
		}
		out[name] = &pluginpb.Value{Json: js, Sensitive: sensitive}
	}
	return out, nil
}

// DecodeOutputs decodes what EncodeOutputs wrote, marking sensitive values with
// tasks.SensitiveMark.
func DecodeOutputs(decl []tasks.Output, in map[string]*pluginpb.Value) (tasks.Outputs, error) {
	types := make(map[string]cty.Type, len(decl))
	for _, o := range decl {
		types[o.Name] = o.Type
	}
	out := make(tasks.Outputs, len(in))
	for name, pv := range in {
		ty, ok := types[name]
		if !ok {
			return nil, fmt.Errorf("output %q is not declared", name)
		}
		v, err := ctyjson.Unmarshal(pv.GetJson(), ty)
		if err != nil {
			return nil, fmt.Errorf("output %q: %w", name, err)
		}
		if pv.GetSensitive() {
			v = v.Mark(tasks.SensitiveMark)
		}
		out[name] = v
	}
	return out, nil
}
