package command

import (
	"os"
	"path/filepath"
	"testing"
)

func TestCachedLookPath(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("PATH", dir+":/usr/bin:/bin")
	prog := filepath.Join(dir, "flowtool")
	if _, ok := cachedLookPath("flowtool"); ok {
		t.Fatal("found a program that does not exist yet")
	}
	// Installed after a miss: found, because misses are not cached.
	if err := os.WriteFile(prog, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if p, ok := cachedLookPath("flowtool"); !ok || p != prog {
		t.Fatalf("after install: %q, %v", p, ok)
	}
	// Removed after a hit: the stale entry is dropped.
	os.Remove(prog)
	if _, ok := cachedLookPath("flowtool"); ok {
		t.Fatal("a removed program is still found")
	}
	if _, ok := cachedLookPath("./flowtool"); ok {
		t.Fatal("names with a slash are left to os/exec")
	}
	if p, ok := cachedLookPath("sh"); !ok || !filepath.IsAbs(p) {
		t.Fatalf("sh: %q, %v", p, ok)
	}
}
