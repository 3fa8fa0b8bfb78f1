package plugin

import (
	"fmt"

	pluginpb "github.com/flowdev/flow/plugin/sdk/proto"
	"github.com/flowdev/flow/tasks"
)

// EncodeSchema describes t, a registered type, for the Schema call: its
// documentation, the attributes of the config struct New returns, its outputs, and
// its capabilities: what its registration found (tasks.Caps), and whether its tasks
// are a Checker, the protocol's own capability, asked here once per type.
func EncodeSchema(t tasks.Type) (*pluginpb.TypeSchema, error) {
	task := t.New()
	attrs, err := tasks.Attributes(task)
	if err != nil {
		return nil, fmt.Errorf("task type %q: %w", t.Name, err)
	}
	_, checks := task.(Checker)
	s := &pluginpb.TypeSchema{Name: t.Name, Summary: t.Summary, Doc: t.Doc, Example: t.Example,
		Undo: t.Undo, UndoAttr: t.UndoAttr, Destroys: t.Destroys(), Checks: checks, Probes: t.Probes(),
		DestroyReads: t.DestroyReads}
	for _, a := range attrs {
		ty, err := EncodeType(a.Type)
		if err != nil {
			return nil, fmt.Errorf("task type %q: attribute %q: %w", t.Name, a.Name, err)
		}
		s.Attributes = append(s.Attributes, &pluginpb.AttributeSchema{Name: a.Name, Type: ty,
			Required: a.Required, Sensitive: a.Sensitive, Doc: a.Doc})
	}
	for _, o := range t.Outputs {
		ty, err := EncodeType(o.Type)
		if err != nil {
			return nil, fmt.Errorf("task type %q: output %q: %w", t.Name, o.Name, err)
		}
		s.Outputs = append(s.Outputs, &pluginpb.OutputSchema{Name: o.Name, Type: ty, Doc: o.Doc,
			Sensitive: o.Sensitive, Clean: o.Clean})
	}
	return s, nil
}

// DecodeSchema reads a type's attributes and outputs from s.
func DecodeSchema(s *pluginpb.TypeSchema) ([]tasks.Attribute, []tasks.Output, error) {
	var attrs []tasks.Attribute
	for _, a := range s.GetAttributes() {
		ty, err := DecodeType(a.GetType())
		if err != nil {
			return nil, nil, fmt.Errorf("task type %q: attribute %q: %w", s.GetName(), a.GetName(), err)
		}
		attrs = append(attrs, tasks.Attribute{Name: a.GetName(), Type: ty, Required: a.GetRequired(),
			Doc: a.GetDoc(), Sensitive: a.GetSensitive()})
	}
	var outs []tasks.Output
	for _, o := range s.GetOutputs() {
		ty, err := DecodeType(o.GetType())
		if err != nil {
			return nil, nil, fmt.Errorf("task type %q: output %q: %w", s.GetName(), o.GetName(), err)
		}
		outs = append(outs, tasks.Output{Name: o.GetName(), Type: ty, Doc: o.GetDoc(),
			Sensitive: o.GetSensitive(), Clean: o.GetClean()})
	}
	return attrs, outs, nil
}
