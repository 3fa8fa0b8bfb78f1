package taskstest

import (
	"testing"

	"github.com/flowdev/flow/tasks"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/gohcl"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

// CheckType checks what `flow tasks` shows of a type: Summary, Doc and Example are set,
// the outputs are exactly outputs (by name and cty type) and each has a doc, and every
// attribute has a doc.
func CheckType(t *testing.T, typ tasks.Type, outputs map[string]cty.Type) {
	t.Helper()
	if typ.Summary == "" || typ.Doc == "" || typ.Example == "" {
		t.Errorf("%s: Summary, Doc and Example must be set", typ.Name)
	}
	if len(typ.Outputs) != len(outputs) {
		t.Errorf("%s: got %d outputs, want %d", typ.Name, len(typ.Outputs), len(outputs))
	}
	for _, o := range typ.Outputs {
		if want, ok := outputs[o.Name]; !ok || !o.Type.Equals(want) || o.Doc == "" {
			t.Errorf("%s: output %q: type %s, doc %q; want type %v and a doc", typ.Name, o.Name, o.Type.FriendlyName(), o.Doc, want)
		}
	}
	attrs, err := tasks.Attributes(typ.New())
	if err != nil {
		t.Fatalf("%s: %v", typ.Name, err)
	}
	for _, a := range attrs {
		if a.Doc == "" {
			t.Errorf("%s: attribute %q has no doc", typ.Name, a.Name)
		}
	}
}

// ExampleBlock parses typ's Example and returns its block, failing the test unless the
// example is exactly one `task "TYPE" "NAME"` block.
func ExampleBlock(t *testing.T, typ tasks.Type) *hclsyntax.Block {
	t.Helper()
	f, diags := hclsyntax.ParseConfig([]byte(typ.Example), typ.Name+".hcl", hcl.InitialPos)
	if diags.HasErrors() {
		t.Fatalf("%s: parse example: %v", typ.Name, diags)
	}
	blocks := f.Body.(*hclsyntax.Body).Blocks
	if len(blocks) != 1 || blocks[0].Type != "task" || len(blocks[0].Labels) != 2 || blocks[0].Labels[0] != typ.Name {
		t.Fatalf("example is not one `task %q \"NAME\"` block:\n%s", typ.Name, typ.Example)
	}
	return blocks[0]
}

// CheckExample decodes typ's Example into a new task, with vars as the variables its
// expressions may refer to (nil for none), and checks that the task validates.
func CheckExample(t *testing.T, typ tasks.Type, vars map[string]cty.Value) {
	t.Helper()
	block := ExampleBlock(t, typ)
	task := typ.New()
	if diags := gohcl.DecodeBody(block.Body, &hcl.EvalContext{Variables: vars}, task); diags.HasErrors() {
		t.Fatalf("%s: decode example: %v", typ.Name, diags)
	}
	if err := task.Validate(); err != nil {
		t.Errorf("%s: example does not validate: %v", typ.Name, err)
	}
}
