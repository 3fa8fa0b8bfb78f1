package tasks_test

import (
	"context"
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/flowdev/flow/tasks"
)

type sample struct {
	Name   string            `hcl:"name" doc:"The name."`
	Count  int               `hcl:"count,optional"`
	Labels map[string]string `hcl:"labels,optional"`
	Any    cty.Value         `hcl:"any,optional"`
}

func (s *sample) Validate() error { return nil }
func (s *sample) Run(context.Context, *tasks.Env) (tasks.Outputs, error) {
	return nil, nil
}

type withBlock struct {
	Inner struct {
		X string `hcl:"x"`
	} `hcl:"inner,block"`
}

func (w *withBlock) Validate() error { return nil }
func (w *withBlock) Run(context.Context, *tasks.Env) (tasks.Outputs, error) {
	return nil, nil
}

type reserved struct {
	Timeout string `hcl:"timeout"`
}

func (r *reserved) Validate() error { return nil }
func (r *reserved) Run(context.Context, *tasks.Env) (tasks.Outputs, error) {
	return nil, nil
}

func TestRegister(t *testing.T) {
	tests := []struct {
		name    string
		typ     tasks.Type
		wantErr string
	}{
		{"ok", tasks.Type{Name: "sample", New: func() tasks.Task { return &sample{} }}, ""},
		{"duplicate", tasks.Type{Name: "sample", New: func() tasks.Task { return &sample{} }}, "already registered"},
		{"no constructor", tasks.Type{Name: "x"}, "constructor are required"},
	}
	reg := tasks.NewRegistry()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := reg.Register(tt.typ)
			if tt.wantErr == "" && err != nil {
				t.Fatalf("Register: %v", err)
			}
			if tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("Register error = %v, want it to contain %q", err, tt.wantErr)
			}
		})
	}
	if got := strings.Join(reg.Names(), ","); got != "sample" {
		t.Errorf("Names = %s, want only sample", got)
	}
	if err := reg.Check(); err != nil {
		t.Errorf("Check: %v", err)
	}
}

// TestCheck: Register takes any struct without reflecting over it; Check names every
// bad type.
func TestCheck(t *testing.T) {
	reg := tasks.NewRegistry()
	reg.MustRegister(tasks.Type{Name: "sample", New: func() tasks.Task { return &sample{} }})
	reg.MustRegister(tasks.Type{Name: "blocky", New: func() tasks.Task { return &withBlock{} }})
	reg.MustRegister(tasks.Type{Name: "res", New: func() tasks.Task { return &reserved{} }})
	reg.MustRegister(tasks.Type{Name: "reads", DestroyReads: []string{"name", "path"}, New: func() tasks.Task { return &namedDestroyer{} }})
	err := reg.Check()
	want := "task type \"blocky\": field Inner: nested blocks are not supported; use a map or object attribute\n" +
		"task type \"reads\": DestroyReads names \"path\", which is no attribute\n" +
		"task type \"res\": attribute \"timeout\" is reserved for the engine"
	if err == nil || err.Error() != want {
		t.Errorf("Check = %v\nwant %s", err, want)
	}
}

func TestAttributesAndDecode(t *testing.T) {
	attrs, err := tasks.Attributes(&sample{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, a := range attrs {
		got = append(got, a.Name+":"+tasks.TypeString(a.Type)+":"+map[bool]string{true: "required", false: "optional"}[a.Required])
	}
	want := "name:string:required count:number:optional labels:map(string):optional any:any:optional"
	if strings.Join(got, " ") != want {
		t.Errorf("Attributes = %s\nwant %s", strings.Join(got, " "), want)
	}
	if attrs[0].Doc != "The name." {
		t.Errorf("doc = %q", attrs[0].Doc)
	}
	s := &sample{}
	err = tasks.Decode(s, map[string]cty.Value{
		"name":   cty.StringVal("n"),
		"count":  cty.NumberIntVal(3),
		"labels": cty.MapVal(map[string]cty.Value{"a": cty.StringVal("b")}),
		"any":    cty.ListVal([]cty.Value{cty.True}),
	})
	if err != nil {
		t.Fatal(err)
	}
	if s.Name != "n" || s.Count != 3 || s.Labels["a"] != "b" || !s.Any.Equals(cty.ListVal([]cty.Value{cty.True})).True() {
		t.Errorf("decoded %+v", s)
	}
	if err := tasks.Decode(&sample{}, map[string]cty.Value{"count": cty.NumberFloatVal(1.5)}); err == nil || !strings.HasPrefix(err.Error(), "count: ") {
		t.Errorf("fractional count: err = %v, want an AttrError on count", err)
	}
}

// namedDestroyer is a Destroyer with one attribute, name, for Check's rule that
// DestroyReads names attributes.
type namedDestroyer struct {
	Name string `hcl:"name"`
}

func (*namedDestroyer) Validate() error                                          { return nil }
func (*namedDestroyer) Run(context.Context, *tasks.Env) (tasks.Outputs, error)   { return nil, nil }
func (*namedDestroyer) Destroy(context.Context, *tasks.Env, tasks.Outputs) error { return nil }
