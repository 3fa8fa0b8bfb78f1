package command

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/flowdev/flow/tasks/taskstest"
)

func TestCachedLookPath(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("PATH", dir+":/usr/bin:/bin")
	prog := filepath.Join(dir, "flowtool")
	if _, _, ok := cachedLookPath("flowtool"); ok {
		t.Fatal("found a program that does not exist yet")
	}
	// Installed after a miss: found, because misses are not cached.
	if err := os.WriteFile(prog, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if p, cached, ok := cachedLookPath("flowtool"); !ok || cached || p != prog {
		t.Fatalf("after install: %q, %v, %v", p, cached, ok)
	}
	if p, cached, ok := cachedLookPath("flowtool"); !ok || !cached || p != prog {
		t.Fatalf("second lookup: %q, %v, %v; want the cached path", p, cached, ok)
	}
	if _, _, ok := cachedLookPath("./flowtool"); ok {
		t.Fatal("names with a slash are left to os/exec")
	}
	if p, _, ok := cachedLookPath("sh"); !ok || !filepath.IsAbs(p) {
		t.Fatalf("sh: %q, %v", p, ok)
	}
}

// TestRunAfterProgramMoved: a program that moved to another PATH directory after it
// was cached still runs: the failed start drops the entry and looks again.
func TestRunAfterProgramMoved(t *testing.T) {
	first, second := t.TempDir(), t.TempDir()
	t.Setenv("PATH", first+":"+second+":/usr/bin:/bin")
	script := []byte("#!/bin/sh\necho moved-ok\n")
	if err := os.WriteFile(filepath.Join(first, "flowmove"), script, 0o755); err != nil {
		t.Fatal(err)
	}
	run := func() (string, error) {
		var out taskstest.Buffer
		c := &Cmd{Argv: []string{"flowmove"}, Stdout: &out, Stderr: &out, What: "command"}
		_, err := c.Run(context.Background())
		return out.String(), err
	}
	if out, err := run(); err != nil || out != "moved-ok\n" {
		t.Fatalf("first run: %q, %v", out, err)
	}
	if err := os.Rename(filepath.Join(first, "flowmove"), filepath.Join(second, "flowmove")); err != nil {
		t.Fatal(err)
	}
	if out, err := run(); err != nil || out != "moved-ok\n" {
		t.Fatalf("after the move: %q, %v", out, err)
	}
	if err := os.Remove(filepath.Join(second, "flowmove")); err != nil {
		t.Fatal(err)
	}
	if _, err := run(); err == nil {
		t.Fatal("a removed program started")
	}
}
