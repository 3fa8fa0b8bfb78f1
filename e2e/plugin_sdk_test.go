package e2e

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestPluginSDKs: a Python plugin on the flow_plugin SDK (json_file) and the
// out-of-tree Go example on the SDK module (kv_file, examples/go-plugin, built as its
// author would: its own go.mod, offline) in one flow, through validate, run, SIGKILL,
// drift, plan, resume and destroy; flow plugins, runs and status --json name both
// executables with their sha256, and $TMPDIR holds nothing of flow's afterwards.
func TestPluginSDKs(t *testing.T) {
	needPython(t)
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	jsonfile := filepath.Join(root, "plugins", "python", "flow-plugin-jsonfile")
	tag := newTag(t)
	dir := pluginFlow(t, `plugin "kvfile" {
  source = "./flow-plugin-kvfile"
}
plugin "jsonfile" {
  source = "`+jsonfile+`"
}
task "json_file" "settings" {
  path  = "settings.json"
  value = { replicas = 3 }
}
task "kv_file" "env" {
  path   = "app.env"
  values = { PORT = "8080", MODE = "prod" }
}
task "exec" "gate" {
  depends_on = [json_file.settings, kv_file.env]
  script     = "test -f go || sleep 60"
}
`)
	kvfile := filepath.Join(dir, "flow-plugin-kvfile")
	buildExample(t, filepath.Join(root, "examples", "go-plugin"), kvfile)
	tmp := filepath.Join(dir, "tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TMPDIR", tmp) // the flow processes' $TMPDIR

	flowExit(t, tag, dir, 0, "validate", "flow.hcl")
	// Before anything runs: which executables the flow would use.
	listed := flowExit(t, tag, dir, 0, "plugins", "--flow", "flow.hcl")
	words := strings.Join(strings.Fields(listed.stdout), " ")
	for _, want := range []string{"jsonfile " + jsonfile + " sha256 " + fileSum(t, jsonfile) + " json_file",
		"kvfile " + kvfile + " sha256 " + fileSum(t, kvfile) + " kv_file"} {
		if !strings.Contains(words, want) {
			t.Errorf("flow plugins --flow: no line with %q\n%s", want, listed.desc)
		}
	}
	p := start(t, tag, dir, "run", "flow.hcl", "--state", "s.db")
	waitStatus(t, tag, dir, "s.db", 30*time.Second, "both plugin tasks recorded as succeeded", func(d statusDoc) bool {
		n := 0
		for _, task := range d.Tasks {
			if task.Status == "succeeded" {
				n++
			}
		}
		return n == 2
	})
	p.signal(t, syscall.SIGKILL)
	p.wait(5 * time.Second)

	if err := os.WriteFile(filepath.Join(dir, "settings.json"), []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	remove(dir, "app.env")
	plan := flowExit(t, tag, dir, 0, "plan", "flow.hcl", "--state", "s.db")
	act, why := planned(plan.stdout)
	if want := "drifted since it succeeded: it differs: settings.json was changed since the run wrote it"; act["json_file.settings"] != "run" || why["json_file.settings"] != want {
		t.Errorf("plan: json_file.settings %q (%q), want run (%q)\n%s", act["json_file.settings"], why["json_file.settings"], want, plan.stdout)
	}
	if want := "drifted since it succeeded: it is gone: app.env was removed"; act["kv_file.env"] != "run" || why["kv_file.env"] != want {
		t.Errorf("plan: kv_file.env %q (%q), want run (%q)\n%s", act["kv_file.env"], why["kv_file.env"], want, plan.stdout)
	}
	touchGo(dir)
	r := flowExit(t, tag, dir, 0, "resume", "--state", "s.db")
	if got := readFile(t, filepath.Join(dir, "settings.json")); got != "{\n  \"replicas\": 3\n}\n" {
		t.Errorf("settings.json = %q after the resume\n%s", got, r.desc)
	}
	if got := readFile(t, filepath.Join(dir, "app.env")); got != "MODE=prod\nPORT=8080\n" {
		t.Errorf("app.env = %q after the resume\n%s", got, r.desc)
	}

	doc := status(t, tag, dir, "s.db")
	want := map[string]string{"kvfile": kvfile, "jsonfile": jsonfile}
	for _, pl := range doc.Plugins {
		if path, ok := want[pl.Name]; ok && pl.Path == path && pl.Sha256 == fileSum(t, path) {
			delete(want, pl.Name)
		}
	}
	if len(want) != 0 {
		t.Errorf("status --json plugins %+v: missing or wrong %v", doc.Plugins, want)
	}
	plain := flowExit(t, tag, dir, 0, "status", "--state", "s.db")
	if !strings.Contains(plain.stdout, "Plugins:") || !strings.Contains(plain.stdout, fileSum(t, kvfile)) {
		t.Errorf("flow status does not name the run's plugins\n%s", plain.desc)
	}
	runs := flowExit(t, tag, dir, 0, "runs", "--state", "s.db")
	if !strings.Contains(runs.stdout, "Run 1 used plugins:") || !strings.Contains(runs.stdout, fileSum(t, jsonfile)) {
		t.Errorf("flow runs does not name the run's plugins\n%s", runs.desc)
	}
	flowExit(t, tag, dir, 0, "destroy", "--state", "s.db", "--auto-approve")
	for _, f := range []string{"settings.json", "app.env"} {
		if _, err := os.Stat(filepath.Join(dir, f)); !os.IsNotExist(err) {
			t.Errorf("%s after destroy: %v", f, err)
		}
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		var names []string
		for _, e := range left {
			names = append(names, e.Name())
		}
		t.Errorf("$TMPDIR holds %v after the commands", names)
	}
}

func fileSum(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// buildExample builds the Go plugin module in src to bin as its author would: its own
// go.mod and go.sum, the SDK by its replace, offline from the module cache, outside
// any workspace and without flow's build flags.
func buildExample(t *testing.T, src, bin string) {
	t.Helper()
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=readonly", "GOPROXY=off", "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build %s as its author would (offline): %v\n%s", src, err, out)
	}
}

// needPython fails the test when Debian's python3 has no grpc (CI installs it).
func needPython(t *testing.T) {
	t.Helper()
	if out, err := exec.Command("/usr/bin/python3", "-c", "import grpc, google.protobuf").CombinedOutput(); err != nil {
		t.Fatalf("python3-grpcio is missing (bash scripts/apt-install.sh python3-grpcio python3-protobuf): %v\n%s", err, out)
	}
}
