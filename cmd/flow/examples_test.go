package main

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/flowdev/flow/cmd/flow/cli"
	"github.com/flowdev/flow/tasks"
)

// Every task type's example is a block users copy into a flow, so it is checked as
// one: loaded and planned (references, types, Validate of what is known) by `flow
// validate` with the registry flow ships. What the example reads but does not declare
// is declared around it with unknown values: each local.NAME, and each other task
// TYPE.NAME with its required attributes.
func TestTaskExamplesValidate(t *testing.T) {
	reg, err := registry()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range reg.Names() {
		typ, _ := reg.Lookup(name)
		t.Run(name, func(t *testing.T) {
			src := typ.Example + "\n" + exampleStubs(t, reg, typ)
			path := filepath.Join(t.TempDir(), name+".hcl")
			if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
				t.Fatal(err)
			}
			var stdout, stderr bytes.Buffer
			if err := cli.New(reg, &stdout, &stderr).Execute([]string{"validate", path}); err != nil {
				t.Errorf("the example of %s does not validate: %v\n%s%s\nflow:\n%s", name, err, stdout.String(), stderr.String(), src)
			}
		})
	}
}

// exampleStubs declares what typ's example reads from outside the block.
func exampleStubs(t *testing.T, reg *tasks.Registry, typ *tasks.Type) string {
	t.Helper()
	f, diags := hclsyntax.ParseConfig([]byte(typ.Example), typ.Name+".hcl", hcl.InitialPos)
	if diags.HasErrors() {
		t.Fatalf("parse example: %v", diags)
	}
	locals, others := map[string]bool{}, map[string]bool{}
	var visit func(b *hclsyntax.Body)
	visit = func(b *hclsyntax.Body) {
		for _, a := range b.Attributes {
			for _, tr := range a.Expr.Variables() {
				if len(tr) < 2 {
					continue
				}
				attr, ok := tr[1].(hcl.TraverseAttr)
				if !ok {
					continue
				}
				switch root := tr.RootName(); {
				case root == "local":
					locals[attr.Name] = true
				case root != typ.Name:
					if _, known := reg.Lookup(root); known {
						others[root+"."+attr.Name] = true
					}
				}
			}
		}
		for _, blk := range b.Blocks {
			visit(blk.Body)
		}
	}
	visit(f.Body.(*hclsyntax.Body))
	var b strings.Builder
	b.WriteString("variable \"unknown\" {}\n")
	for _, l := range slices.Sorted(maps.Keys(locals)) {
		fmt.Fprintf(&b, "locals {\n  %s = var.unknown\n}\n", l)
	}
	for _, addr := range slices.Sorted(maps.Keys(others)) {
		typeName, taskName, _ := strings.Cut(addr, ".")
		other, _ := reg.Lookup(typeName)
		attrs, err := tasks.Attributes(other.New())
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "task %q %q {\n", typeName, taskName)
		for _, a := range attrs {
			if a.Required {
				fmt.Fprintf(&b, "  %s = var.unknown\n", a.Name)
			}
		}
		b.WriteString("}\n")
	}
	return b.String()
}
