package image

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/flowdev/flow/tasks"
)

// A second build with unchanged inputs is checked with one HEAD and pushes nothing; a
// changed file, or a registry that lost the tag, builds and pushes again.
func TestBuildCacheSkipsUnchangedInputs(t *testing.T) {
	t.Setenv("FLOW_BUILD_CACHE", t.TempDir())
	reg := newTestRegistry(t)
	dir := t.TempDir()
	writeTree(t, dir, appFiles, 0o644, 0o755)
	b := appBuild(dir, "")
	b.Tag = ""
	b.Push = reg.host + "/lab/agent:dev"

	first, _ := run(t, b)
	reg.reset()
	second, stdout := run(t, b)
	if !strings.Contains(stdout, "inputs unchanged") || reg.writes() != 0 {
		t.Errorf("second build: %d writes, stdout %q; want no writes and inputs unchanged", reg.writes(), stdout)
	}
	if second["digest"].AsString() != first["digest"].AsString() || second["reference"].AsString() != first["reference"].AsString() {
		t.Errorf("outputs %v, want %v", second, first)
	}

	later := time.Now().Add(time.Minute)
	path := filepath.Join(dir, "conf/agent.yaml")
	if err := os.WriteFile(path, []byte("level: debug\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, later, later); err != nil {
		t.Fatal(err)
	}
	third, stdout := run(t, b)
	if strings.Contains(stdout, "inputs unchanged") || third["digest"].AsString() == first["digest"].AsString() {
		t.Errorf("after a change: digest %s (first %s), stdout %q; want a new build", third["digest"], first["digest"], stdout)
	}

	// The cache is a hint: a registry without the remembered digest gets the image again.
	other := *b
	other.Push = newTestRegistry(t).host + "/lab/agent:dev"
	rememberDigest(other.Push, mustKey(t, &other), mustHash(t, third["digest"].AsString()))
	if _, stdout := run(t, &other); strings.Contains(stdout, "inputs unchanged") || !strings.Contains(stdout, "pushed") {
		t.Errorf("registry without the image: stdout %q; want a push", stdout)
	}
}

func mustKey(t *testing.T, b *Build) string {
	t.Helper()
	k, err := b.inputsKey(&tasks.Env{})
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func mustHash(t *testing.T, s string) v1.Hash {
	t.Helper()
	h, err := v1.NewHash(s)
	if err != nil {
		t.Fatal(err)
	}
	return h
}
