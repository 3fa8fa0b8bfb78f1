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

// TestPluginSDKs: a Python plugin on the flow_plugin SDK (json_file) and a Go plugin
// on plugin/sdk (marker) in one flow, through validate, run, SIGKILL, drift, plan,
// resume and destroy; flow status --json names both executables with their sha256,
// and $TMPDIR holds nothing of flow's afterwards.
func TestPluginSDKs(t *testing.T) {
	if out, err := exec.Command("/usr/bin/python3", "-c", "import grpc, google.protobuf").CombinedOutput(); err != nil {
		t.Fatalf("python3-grpcio is missing (bash scripts/apt-install.sh python3-grpcio python3-protobuf): %v\n%s", err, out)
	}
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	jsonfile := filepath.Join(root, "plugins", "python", "flow-plugin-jsonfile")
	tag := newTag(t)
	dir := pluginFlow(t, `plugin "marker" {
  source = "./flow-plugin-marker"
}
plugin "jsonfile" {
  source = "`+jsonfile+`"
}
task "json_file" "settings" {
  path  = "settings.json"
  value = { replicas = 3 }
}
task "marker" "m" {
  path    = "m.txt"
  content = "hello"
}
task "exec" "gate" {
  depends_on = [json_file.settings, marker.m]
  script     = "test -f go || sleep 60"
}
`)
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
		"marker " + filepath.Join(dir, "flow-plugin-marker") + " sha256 " + fileSum(t, filepath.Join(dir, "flow-plugin-marker"))} {
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
	plan := flowExit(t, tag, dir, 0, "plan", "flow.hcl", "--state", "s.db")
	act, why := planned(plan.stdout)
	if want := "drifted since it succeeded: it differs: settings.json was changed since the run wrote it"; act["json_file.settings"] != "run" || why["json_file.settings"] != want {
		t.Errorf("plan: json_file.settings %q (%q), want run (%q)\n%s", act["json_file.settings"], why["json_file.settings"], want, plan.stdout)
	}
	if act["marker.m"] == "run" {
		t.Errorf("plan runs marker.m again, which did not drift\n%s", plan.stdout)
	}
	touchGo(dir)
	r := flowExit(t, tag, dir, 0, "resume", "--state", "s.db")
	if got := readFile(t, filepath.Join(dir, "settings.json")); got != "{\n  \"replicas\": 3\n}\n" {
		t.Errorf("settings.json = %q after the resume\n%s", got, r.desc)
	}

	doc := status(t, tag, dir, "s.db")
	want := map[string]string{"marker": filepath.Join(dir, "flow-plugin-marker"), "jsonfile": jsonfile}
	for _, pl := range doc.Plugins {
		if path, ok := want[pl.Name]; ok && pl.Path == path && pl.Sha256 == fileSum(t, path) {
			delete(want, pl.Name)
		}
	}
	if len(want) != 0 {
		t.Errorf("status --json plugins %+v: missing or wrong %v", doc.Plugins, want)
	}
	runs := flowExit(t, tag, dir, 0, "runs", "--state", "s.db")
	if !strings.Contains(runs.stdout, "Run 1 used plugins:") || !strings.Contains(runs.stdout, fileSum(t, jsonfile)) {
		t.Errorf("flow runs does not name the run's plugins\n%s", runs.desc)
	}
	flowExit(t, tag, dir, 0, "destroy", "--state", "s.db", "--auto-approve")
	for _, f := range []string{"settings.json", "m.txt"} {
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
