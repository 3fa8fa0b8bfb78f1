package exec

import (
	"errors"
	"strings"
	"testing"

	"github.com/flowdev/flow/tasks"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/gohcl"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

func TestValidate(t *testing.T) {
	tests := []struct {
		name     string
		exec     Exec
		wantAttr string // "" means valid
		wantMsg  string
	}{
		{"command", Exec{Command: []string{"go", "build"}}, "", ""},
		{"script", Exec{Script: "echo hi"}, "", ""},
		{"all optional set", Exec{Command: []string{"ls"}, Env: map[string]string{"A": "1"}, Dir: "/", Stdin: "x", OkExitCodes: []int{3}}, "", ""},
		{"neither", Exec{}, "command", "one of command or script is required"},
		{"both", Exec{Command: []string{"ls"}, Script: "ls"}, "script", "command and script are mutually exclusive; set only one"},
		{"empty command and script", Exec{Command: []string{}, Script: "ls"}, "script", "mutually exclusive"},
		{"empty command", Exec{Command: []string{}}, "command", "must not be empty"},
		{"empty program", Exec{Command: []string{"", "x"}}, "command", "first element (the program) must not be empty"},
		{"env name with =", Exec{Script: "true", Env: map[string]string{"A=B": "1"}}, "env", "no '='"},
		{"empty env name", Exec{Script: "true", Env: map[string]string{"": "1"}}, "env", "non-empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.exec.Validate()
			if tt.wantAttr == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			var ae *tasks.AttrError
			if !errors.As(err, &ae) {
				t.Fatalf("Validate() = %v, want *tasks.AttrError", err)
			}
			if ae.Attr != tt.wantAttr || !strings.Contains(ae.Err.Error(), tt.wantMsg) {
				t.Errorf("Validate() = %q on %q, want %q on %q", ae.Err, ae.Attr, tt.wantMsg, tt.wantAttr)
			}
		})
	}
}

func TestRegister(t *testing.T) {
	r := tasks.NewRegistry()
	if err := Register(r); err != nil {
		t.Fatalf("Register: %v", err)
	}
	typ, ok := r.Lookup("exec")
	if !ok {
		t.Fatal(`type "exec" not registered`)
	}
	if typ.Summary == "" || typ.Doc == "" || typ.Example == "" {
		t.Errorf("Summary, Doc and Example must be set: %+v", typ)
	}
	wantOutputs := map[string]cty.Type{"exit_code": cty.Number, "stdout": cty.String, "stderr": cty.String}
	if len(typ.Outputs) != len(wantOutputs) {
		t.Errorf("got %d outputs, want %d", len(typ.Outputs), len(wantOutputs))
	}
	for _, o := range typ.Outputs {
		if want, ok := wantOutputs[o.Name]; !ok || !o.Type.Equals(want) || o.Doc == "" {
			t.Errorf("output %q: type %s, doc %q; want type %v and a doc", o.Name, o.Type.FriendlyName(), o.Doc, want)
		}
	}
	if _, ok := typ.New().(*Exec); !ok {
		t.Errorf("New() returned %T, want *Exec", typ.New())
	}
	if err := Register(r); err == nil {
		t.Error("second Register succeeded, want duplicate error")
	}
}

func TestAttributes(t *testing.T) {
	attrs, err := tasks.Attributes(&Exec{})
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		name string
		typ  cty.Type
	}{
		{"command", cty.List(cty.String)},
		{"script", cty.String},
		{"env", cty.Map(cty.String)},
		{"dir", cty.String},
		{"stdin", cty.String},
		{"ok_exit_codes", cty.List(cty.Number)},
	}
	if len(attrs) != len(want) {
		t.Fatalf("got %d attributes, want %d: %+v", len(attrs), len(want), attrs)
	}
	for i, w := range want {
		a := attrs[i]
		if a.Name != w.name || !a.Type.Equals(w.typ) || a.Required || a.Doc == "" {
			t.Errorf("attribute %d = %+v, want optional %s of type %s with a doc", i, a, w.name, w.typ.FriendlyName())
		}
	}
}

// The example must be a task block that decodes into a valid Exec.
func TestExampleDecodes(t *testing.T) {
	r := tasks.NewRegistry()
	if err := Register(r); err != nil {
		t.Fatal(err)
	}
	typ, _ := r.Lookup("exec")
	f, diags := hclsyntax.ParseConfig([]byte(typ.Example), "example.hcl", hcl.InitialPos)
	if diags.HasErrors() {
		t.Fatalf("parse example: %v", diags)
	}
	blocks := f.Body.(*hclsyntax.Body).Blocks
	if len(blocks) != 1 || blocks[0].Type != "task" || len(blocks[0].Labels) != 2 || blocks[0].Labels[0] != "exec" {
		t.Fatalf("example is not one `task \"exec\" \"NAME\"` block:\n%s", typ.Example)
	}
	var e Exec
	if diags := gohcl.DecodeBody(blocks[0].Body, nil, &e); diags.HasErrors() {
		t.Fatalf("decode example: %v", diags)
	}
	if err := e.Validate(); err != nil {
		t.Errorf("example does not validate: %v", err)
	}
}
