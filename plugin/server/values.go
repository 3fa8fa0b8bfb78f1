package server

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/gocty"

	"github.com/flowdev/flow/tasks"
)

// Values is the inverse of tasks.Decode: the attribute values of a config struct, by
// name, each of its attribute's type. Tests use it to send a task written as a Go
// value through the plugin path.
func Values(t tasks.Task) (map[string]cty.Value, error) {
	attrs, err := tasks.Attributes(t)
	if err != nil {
		return nil, err
	}
	types := make(map[string]cty.Type, len(attrs))
	for _, a := range attrs {
		types[a.Name] = a.Type
	}
	rv := reflect.ValueOf(t).Elem()
	out := make(map[string]cty.Value, len(attrs))
	for i := 0; i < rv.NumField(); i++ {
		name, _, _ := strings.Cut(rv.Type().Field(i).Tag.Get("hcl"), ",")
		ty, ok := types[name]
		if !ok {
			continue
		}
		f := rv.Field(i)
		if v, ok := f.Interface().(cty.Value); ok {
			out[name] = v
			continue
		}
		if (f.Kind() == reflect.Slice || f.Kind() == reflect.Map || f.Kind() == reflect.Pointer) && f.IsNil() {
			out[name] = cty.NullVal(ty)
			continue
		}
		v, err := gocty.ToCtyValue(f.Interface(), ty)
		if err != nil {
			return nil, fmt.Errorf("attribute %q: %w", name, err)
		}
		out[name] = v
	}
	return out, nil
}
