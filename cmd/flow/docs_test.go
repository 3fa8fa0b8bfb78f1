package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowdev/flow/tasks"
)

// Every task type flow ships has a page under docs/tasks that names each of its
// attributes and outputs, so the reference cannot silently fall behind the code.
func TestEveryTaskTypeIsDocumented(t *testing.T) {
	reg, err := registry()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range reg.Names() {
		typ, _ := reg.Lookup(name)
		page := filepath.Join("..", "..", "docs", "tasks", name+".md")
		b, err := os.ReadFile(page)
		if err != nil {
			t.Errorf("task type %s has no reference page: %v", name, err)
			continue
		}
		attrs, err := tasks.Attributes(typ.New())
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range attrs {
			if !strings.Contains(string(b), "`"+a.Name+"`") {
				t.Errorf("%s does not mention attribute `%s`", page, a.Name)
			}
		}
		for _, o := range typ.Outputs {
			if !strings.Contains(string(b), "`"+o.Name+"`") {
				t.Errorf("%s does not mention output `%s`", page, o.Name)
			}
		}
	}
}

// Every task type says how flow destroy undoes it, or that it cannot; one that
// implements tasks.Destroyer says "flow destroy", one that does not must not claim to.
func TestEveryTaskTypeSaysHowItIsUndone(t *testing.T) {
	reg, err := registry()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range reg.Names() {
		typ, _ := reg.Lookup(name)
		_, destroyer := typ.New().(tasks.Destroyer)
		switch {
		case typ.Undo == "":
			t.Errorf("%s: no Undo text", name)
		case destroyer && !strings.HasPrefix(typ.Undo, "flow destroy "):
			t.Errorf("%s implements Destroy; its Undo should say what flow destroy does: %q", name, typ.Undo)
		case !destroyer && strings.HasPrefix(typ.Undo, "flow destroy "):
			t.Errorf("%s does not implement Destroy but its Undo says %q", name, typ.Undo)
		}
	}
}
