package engine_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowdev/flow/engine"
	"github.com/flowdev/flow/engine/state"
	"github.com/flowdev/flow/tasks"
	"github.com/flowdev/flow/tasks/exec"
	"github.com/flowdev/flow/tasks/kube"
)

const workDirKubeconfig = `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster:
    server: https://127.0.0.1:6443
contexts:
- name: x
  context:
    cluster: c
    user: u
current-context: x
users:
- name: u
  user:
    token: t
`

// workDirFlow names only relative paths. Its gate waits for a file that is not there
// on the first run; then exec writes where it runs and path.cwd, and kubeconfig reads
// and writes relative files, one its undo removes.
const workDirFlow = `
task "exec" "gate" {
  script = "test -f allow"
}
task "exec" "write" {
  depends_on = [exec.gate]
  script     = "mkdir -p out && pwd > out/pwd && echo ${path.cwd} > out/cwd"
  undo       = "rm -f out/pwd out/cwd"
}
task "kubeconfig" "kc" {
  depends_on = [exec.gate]
  source     = "src.kubeconfig"
  path       = "kc/written"
}
`

// TestTasksActInTheRunsDirectoryNotTheProcesss: the engine never changes the
// process's working directory. A resume and a destroy started in another directory
// act in the run's recorded one: exec's cmd.Dir, path.cwd and the relative paths
// kubeconfig reads and writes (and removes when undone) are all the run's, nothing
// lands where the process runs, and os.Getwd is the same afterwards.
func TestTasksActInTheRunsDirectoryNotTheProcesss(t *testing.T) {
	runDir, elsewhere := realDir(t), realDir(t)
	write(t, filepath.Join(runDir, "flow.hcl"), workDirFlow)
	write(t, filepath.Join(runDir, "src.kubeconfig"), workDirKubeconfig)
	reg := tasks.NewRegistry()
	if err := exec.Register(reg); err != nil {
		t.Fatal(err)
	}
	if err := kube.Register(reg); err != nil {
		t.Fatal(err)
	}
	statePath := filepath.Join(elsewhere, "state.db")
	s := engine.NewSession(statePath, reg)

	t.Chdir(runDir) // the run is started in its project, and records it
	out, err := s.Run(context.Background(), engine.Request{Flow: "flow.hcl", Parallelism: 1})
	if err != nil || out.Result.Status != state.Failed || out.Run.Dir != runDir {
		t.Fatalf("first run: %v %+v (want failed, in %s)", err, out, runDir)
	}
	write(t, filepath.Join(runDir, "allow"), "")

	t.Chdir(elsewhere)
	out, err = s.Resume(context.Background(), engine.Request{Parallelism: 1})
	if err != nil || out.Result.Status != state.Succeeded {
		t.Fatalf("resume from another directory: %v %+v", err, out)
	}
	assertCwd(t, elsewhere)
	if got := read(t, filepath.Join(runDir, "out", "pwd")); got != runDir {
		t.Errorf("exec ran in %q, want the run's directory %q", got, runDir)
	}
	if got := read(t, filepath.Join(runDir, "out", "cwd")); got != runDir {
		t.Errorf("path.cwd is %q, want the run's directory %q", got, runDir)
	}
	if _, err := os.Stat(filepath.Join(runDir, "kc", "written")); err != nil {
		t.Errorf("kubeconfig did not write in the run's directory: %v", err)
	}
	for _, p := range []string{"out", "kc"} {
		if _, err := os.Stat(filepath.Join(elsewhere, p)); err == nil {
			t.Errorf("%s was made in the process's directory %s", p, elsewhere)
		}
	}

	out, err = s.Destroy(context.Background(), engine.Request{Parallelism: 1})
	if err != nil || out.Result.Status != state.Succeeded {
		t.Fatalf("destroy from another directory: %v %+v", err, out)
	}
	assertCwd(t, elsewhere)
	for _, p := range []string{filepath.Join("kc", "written"), filepath.Join("out", "pwd")} {
		if _, err := os.Stat(filepath.Join(runDir, p)); !os.IsNotExist(err) {
			t.Errorf("destroy left %s in the run's directory: %v", p, err)
		}
	}
}

// realDir is a new temporary directory, its symbolic links resolved (as os.Getwd
// reports it).
func realDir(t *testing.T) string {
	t.Helper()
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

func assertCwd(t *testing.T, want string) {
	t.Helper()
	if wd, err := os.Getwd(); err != nil || wd != want {
		t.Errorf("the process's working directory is %q (%v), want %q: the engine changed it", wd, err, want)
	}
}
