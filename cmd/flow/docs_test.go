package main

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowdev/flow/tasks"
	"github.com/flowdev/flow/tasks/taskdoc"
)

var update = flag.Bool("update", false, "rewrite docs/tasks/*.md from the registry")

// Every task type flow ships has a page under docs/tasks generated from the registry
// (its summary, doc, attributes, outputs and example), followed by hand-written notes;
// a page that differs from the registry fails, and -update rewrites it. A page without
// a registered type fails too.
func TestTaskPages(t *testing.T) {
	reg, err := registry()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join("..", "..", "docs", "tasks")
	for _, name := range reg.Names() {
		typ, _ := reg.Lookup(name)
		path := filepath.Join(dir, name+".md")
		existing, err := os.ReadFile(path)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		want, err := taskdoc.Page(typ, existing)
		if err != nil {
			t.Fatal(err)
		}
		if *update {
			if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if string(existing) != want {
			t.Errorf("%s is not what the registry generates; run go test ./cmd/flow -run TestTaskPages -update", path)
		}
	}
	pages, _ := filepath.Glob(filepath.Join(dir, "*.md"))
	for _, p := range pages {
		if _, ok := reg.Lookup(strings.TrimSuffix(filepath.Base(p), ".md")); !ok {
			t.Errorf("%s documents no registered task type", p)
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

// The registry flow ships passes Check: Register leaves the reflective checks to it.
func TestShippedRegistry(t *testing.T) {
	reg, err := registry()
	if err != nil {
		t.Fatal(err)
	}
	if err := reg.Check(); err != nil {
		t.Error(err)
	}
}
