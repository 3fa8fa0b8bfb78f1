package lxd

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/flowdev/flow/tasks"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/gohcl"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

// launchTestInstance starts a fresh busybox container, deleted when the test
// ends.
func launchTestInstance(t *testing.T) string {
	t.Helper()
	name := testName("b")
	deleteInstanceAtCleanup(t, name)
	lxc(t, "launch", testImage(t), name)
	return name
}

// inside runs a shell script in instance with the lxc CLI and returns its
// trimmed output.
func inside(t *testing.T, instance, script string) string {
	t.Helper()
	return strings.TrimSpace(lxc(t, "exec", instance, "--", "sh", "-c", script))
}

// runTask validates task and runs it with a background context, returning
// its outputs, everything it printed and its error.
func runTask(t *testing.T, task tasks.Task) (tasks.Outputs, string, error) {
	t.Helper()
	if err := task.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	env, buf := testEnv(t)
	out, err := task.Run(context.Background(), env)
	return out, buf.String(), err
}

// mustRun is runTask for runs that must succeed.
func mustRun(t *testing.T, task tasks.Task) (tasks.Outputs, string) {
	t.Helper()
	out, printed, err := runTask(t, task)
	if err != nil {
		t.Fatalf("Run: %v\noutput:\n%s", err, printed)
	}
	return out, printed
}

func outStr(t *testing.T, out tasks.Outputs, name string) string {
	t.Helper()
	v, ok := out[name]
	if !ok || v.Type() != cty.String {
		t.Fatalf("output %q = %#v, want a string", name, v)
	}
	return v.AsString()
}

func outNum(t *testing.T, out tasks.Outputs, name string) int64 {
	t.Helper()
	v, ok := out[name]
	if !ok || v.Type() != cty.Number {
		t.Fatalf("output %q = %#v, want a number", name, v)
	}
	n, _ := v.AsBigFloat().Int64()
	return n
}

// validateCase is one row of a table-driven Validate test.
type validateCase struct {
	name     string
	task     tasks.Task
	wantAttr string // "" means valid
	wantMsg  string
}

func checkValidate(t *testing.T, tests []validateCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.task.Validate()
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

// checkType checks a type's registration: docs, outputs, and an example that
// decodes into a valid task.
func checkType(t *testing.T, typ tasks.Type, wantOutputs map[string]cty.Type) {
	t.Helper()
	if typ.Summary == "" || typ.Doc == "" || typ.Example == "" {
		t.Errorf("%s: Summary, Doc and Example must be set", typ.Name)
	}
	if len(typ.Outputs) != len(wantOutputs) {
		t.Errorf("%s: got %d outputs, want %d", typ.Name, len(typ.Outputs), len(wantOutputs))
	}
	for _, o := range typ.Outputs {
		if want, ok := wantOutputs[o.Name]; !ok || !o.Type.Equals(want) || o.Doc == "" {
			t.Errorf("%s: output %q: type %s, doc %q; want type %v and a doc", typ.Name, o.Name, o.Type.FriendlyName(), o.Doc, want)
		}
	}
	attrs, err := tasks.Attributes(typ.New())
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range attrs {
		if a.Doc == "" {
			t.Errorf("%s: attribute %q has no doc", typ.Name, a.Name)
		}
	}
	f, diags := hclsyntax.ParseConfig([]byte(typ.Example), "example.hcl", hcl.InitialPos)
	if diags.HasErrors() {
		t.Fatalf("%s: parse example: %v", typ.Name, diags)
	}
	blocks := f.Body.(*hclsyntax.Body).Blocks
	if len(blocks) != 1 || blocks[0].Type != "task" || len(blocks[0].Labels) != 2 || blocks[0].Labels[0] != typ.Name {
		t.Fatalf("example is not one `task %q \"NAME\"` block:\n%s", typ.Name, typ.Example)
	}
	task := typ.New()
	ctx := &hcl.EvalContext{Variables: map[string]cty.Value{
		"local": cty.ObjectVal(map[string]cty.Value{"lxd": cty.MapValEmpty(cty.String)}),
	}}
	if diags := gohcl.DecodeBody(blocks[0].Body, ctx, task); diags.HasErrors() {
		t.Fatalf("%s: decode example: %v", typ.Name, diags)
	}
	if err := task.Validate(); err != nil {
		t.Errorf("%s: example does not validate: %v", typ.Name, err)
	}
}
