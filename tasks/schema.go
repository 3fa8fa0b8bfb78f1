package tasks

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/gocty"
)

// Attribute documents one attribute or nested block of a task type.
type Attribute struct {
	Name     string
	Type     cty.Type
	Required bool
	Doc      string
	// Sensitive attributes hold a secret (tag `sensitive:"true"`); flow tasks says so.
	Sensitive bool
	// SensitiveKeys (tag `sensitive_keys:"k1,k2"`) are keys of a map attribute whose
	// values are single-use secrets, such as an LXD trust token: the engine marks them
	// sensitive (redacted from logs), leaves them out of the recorded inputs and the
	// fingerprint, so an undo, refresh or resume runs without them and a new token
	// changes nothing. A task must therefore not need them once it has succeeded.
	SensitiveKeys []string
}

// Described is a task whose attributes are described at run time rather than by
// hcl-tagged fields: a plugin's type. Attributes returns its Schema, and Decode calls
// its DecodeValues with the same values it would assign to fields.
type Described interface {
	Task
	Schema() []Attribute
	DecodeValues(values map[string]cty.Value) error
}

// SensitiveInputs is a task told, after it is decoded and before Validate, which of
// its inputs derive from a sensitive value: by attribute name, the paths inside that
// attribute's value (an empty path is the whole value). Decode sees values without
// their marks; a task that hands a value on keeps a secret secret with it (k8s_job
// puts such an env value into a Kubernetes Secret instead of the Job's spec).
type SensitiveInputs interface {
	Task
	SetSensitive(paths map[string][]cty.Path)
}

// Attributes lists the hcl-tagged fields of a task's config struct, in field order.
// Its types are what a value is converted to before decoding, so the config loader
// uses them to report a wrong type on the attribute's own range.
func Attributes(t Task) ([]Attribute, error) {
	if d, ok := t.(Described); ok {
		return d.Schema(), nil
	}
	rv := reflect.ValueOf(t)
	if rv.Kind() != reflect.Pointer || rv.Elem().Kind() != reflect.Struct {
		return nil, fmt.Errorf("constructor must return a pointer to a struct, got %T", t)
	}
	st := rv.Elem().Type()
	var out []Attribute
	for i := 0; i < st.NumField(); i++ {
		f := st.Field(i)
		tag, ok := f.Tag.Lookup("hcl")
		if !ok {
			continue
		}
		name, kind, _ := strings.Cut(tag, ",")
		a := Attribute{Name: name, Doc: f.Tag.Get("doc"), Sensitive: f.Tag.Get("sensitive") == "true"}
		if keys := f.Tag.Get("sensitive_keys"); keys != "" {
			a.SensitiveKeys = strings.Split(keys, ",")
		}
		switch kind {
		case "", "attr":
			a.Required = true
		case "optional":
		case "block":
			// Bodies are evaluated attribute by attribute so that each value can be
			// fingerprinted and referenced; structure goes in map or object attributes.
			return nil, fmt.Errorf("field %s: nested blocks are not supported; use a map or object attribute", f.Name)
		default:
			continue // label, remain: not attributes a user writes
		}
		ty, err := impliedType(f.Type)
		if err != nil {
			return nil, fmt.Errorf("attribute %q: %w", name, err)
		}
		a.Type = ty
		out = append(out, a)
	}
	return out, nil
}

var ctyValueType = reflect.TypeOf(cty.Value{})

func impliedType(t reflect.Type) (cty.Type, error) {
	if t == ctyValueType {
		return cty.DynamicPseudoType, nil
	}
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return gocty.ImpliedType(reflect.Zero(t).Interface())
}

// TypeString renders a cty type the way a user writes it in a variable block.
func TypeString(t cty.Type) string {
	switch {
	case t == cty.DynamicPseudoType:
		return "any"
	case t.IsPrimitiveType():
		return t.FriendlyName()
	case t.IsListType():
		return "list(" + TypeString(t.ElementType()) + ")"
	case t.IsSetType():
		return "set(" + TypeString(t.ElementType()) + ")"
	case t.IsMapType():
		return "map(" + TypeString(t.ElementType()) + ")"
	default:
		return t.FriendlyName()
	}
}

// Decode assigns values, by attribute name, to t's hcl-tagged fields. Values must be
// unmarked and already converted to the attribute's type; null leaves the field zero.
// A Duration that does not parse is an *AttrError.
func Decode(t Task, values map[string]cty.Value) error {
	if d, ok := t.(Described); ok {
		return d.DecodeValues(values)
	}
	rv := reflect.ValueOf(t).Elem()
	st := rv.Type()
	for i := 0; i < st.NumField(); i++ {
		name, _, _ := strings.Cut(st.Field(i).Tag.Get("hcl"), ",")
		val, ok := values[name]
		if !ok || name == "" || val.IsNull() {
			continue
		}
		if err := gocty.FromCtyValue(val, rv.Field(i).Addr().Interface()); err != nil {
			return &AttrError{Attr: name, Err: err}
		}
		if d, ok := rv.Field(i).Interface().(Duration); ok {
			if _, err := d.Parse(); err != nil {
				return &AttrError{Attr: name, Err: err}
			}
		}
	}
	return nil
}
