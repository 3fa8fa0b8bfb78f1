package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

var (
	pluginOnce sync.Once
	pluginBin  string
	pluginErr  error
)

// markerPlugin builds plugin/internal/markerplugin once per test process.
func markerPlugin(t *testing.T) string {
	t.Helper()
	pluginOnce.Do(func() {
		root, err := moduleRoot()
		if err != nil {
			pluginErr = err
			return
		}
		pluginBin = filepath.Join(binDir, "flow-plugin-marker")
		cmd := exec.Command("go", "build", "-buildvcs=false", "-o", pluginBin, "./plugin/internal/markerplugin")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			pluginErr = err
			t.Logf("%s", out)
		}
	})
	if pluginErr != nil {
		t.Fatalf("build the marker plugin: %v", pluginErr)
	}
	return pluginBin
}

// pluginFlow copies the plugin flow (with src as flow.hcl when set) and the plugin
// next to it into a new directory.
func pluginFlow(t *testing.T, src string) string {
	t.Helper()
	dir := t.TempDir()
	if src == "" {
		src = readFile(t, testdata(t, "plugin/flow.hcl"))
	}
	if err := os.WriteFile(filepath.Join(dir, "flow.hcl"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	bin, err := os.ReadFile(markerPlugin(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "flow-plugin-marker"), bin, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// pluginProcs are the live processes running the plugin executable in dir.
func pluginProcs(tag, dir string) []int {
	var pids []int
	for pid := range tagged(tag) {
		if exe, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/exe"); err == nil && strings.HasPrefix(exe, dir) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// TestPluginValidate: a plugin type's attributes are checked against its schema with
// the diagnostics of a built-in type, and its Validate errors point at the attribute.
func TestPluginValidate(t *testing.T) {
	tag := newTag(t)
	const head = `plugin "marker" {
  source = "./flow-plugin-marker"
}
`
	tests := []struct {
		name, src string
		want      []string
	}{
		{"schema", head + `task "marker" "missing" {
  path = "x"
}
task "marker" "unknown" {
  path    = "y"
  content = "z"
  colour  = "red"
}
`, []string{`The argument "content" is required, but no definition was found.`, `An argument named "colour" is not expected here.`}},
		{"values", head + `task "marker" "unclean" {
  path    = "a/../b"
  content = "z"
}
task "marker" "typed" {
  path    = "t"
  content = "z"
  crash   = "often"
}
`, []string{`marker.unclean: path: "a/../b" is not clean, write "b".`, `Inappropriate value for attribute "crash"`}},
	}
	var dir string
	for _, tt := range tests {
		dir = pluginFlow(t, tt.src)
		r := runFlow(t, tag, dir, 30*time.Second, "validate", "flow.hcl")
		if r.code != 2 {
			t.Fatalf("%s: validate exited %d, want 2\n%s", tt.name, r.code, r.desc)
		}
		for _, want := range tt.want {
			if !strings.Contains(r.stderr, want) {
				t.Errorf("%s: validate lacks %q\n%s", tt.name, want, r.desc)
			}
		}
	}
	r := runFlow(t, tag, dir, 30*time.Second, "tasks", "--flow", "flow.hcl", "marker")
	if r.code != 0 || !strings.Contains(r.stdout, `Served by the plugin "marker"`) || !strings.Contains(r.stdout, "content  string  required") {
		t.Errorf("flow tasks --flow marker:\n%s", r.desc)
	}
}

// TestPluginVersionRefused: a plugin of another protocol version is refused, naming both.
func TestPluginVersionRefused(t *testing.T) {
	tag := newTag(t)
	dir := pluginFlow(t, `plugin "old" {
  source = "./old-plugin"
}
`)
	script := "#!/bin/sh\necho '1|3|unix|/nonexistent.sock|grpc'\nsleep 5\n"
	if err := os.WriteFile(filepath.Join(dir, "old-plugin"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	r := runFlow(t, tag, dir, 30*time.Second, "validate", "flow.hcl")
	if r.code != 2 || !strings.Contains(strings.Join(strings.Fields(r.stderr), " "), "speaks plugin protocol 3, this flow speaks 1 to 2") {
		t.Errorf("validate of a protocol 3 plugin:\n%s", r.desc)
	}
}

// startUntilMarkerC runs the plugin flow with a slow last step and returns once marker
// c has written its file (its checkpoint is not written yet).
func startUntilMarkerC(t *testing.T, tag, dir string) *proc {
	t.Helper()
	p := start(t, tag, dir, "run", "flow.hcl", "--state", "s.db", "--var", "slow=60s")
	deadline := time.Now().Add(30 * time.Second)
	// Marker a (which prints the secret) finished too: on a loaded machine it may start
	// after c has written.
	for !strings.Contains(readFileOr(filepath.Join(dir, "writes.log")), "out-c.txt") ||
		!strings.Contains(p.stdout.String(), `marker.m["a"]: succeeded`) {
		if time.Now().After(deadline) || p.exited() {
			t.Fatalf("marker c never wrote its file, or marker a never finished\n%s", p.describe())
		}
		time.Sleep(20 * time.Millisecond)
	}
	return p
}

// TestPluginKillResumeDestroy: a run through a plugin, SIGKILLed after an instance
// wrote its file but before its checkpoint, leaves no plugin process; the resume
// creates nothing twice (the plugin's check says "already present"), a secret the
// plugin prints is redacted, and destroy removes what the plugin created.
func TestPluginKillResumeDestroy(t *testing.T) {
	tag := newTag(t)
	dir := pluginFlow(t, "")
	p := startUntilMarkerC(t, tag, dir)
	plugins := pluginProcs(tag, dir)
	if len(plugins) != 1 {
		t.Fatalf("plugin processes %v, want 1", plugins)
	}
	p.signal(t, syscall.SIGKILL)
	p.wait(5 * time.Second)
	for end := time.Now().Add(3 * time.Second); len(pluginProcs(tag, dir)) > 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("plugin processes %v outlive the SIGKILLed flow", pluginProcs(tag, dir))
		}
	}
	if strings.Contains(p.stdout.String(), "s3cret-token-value") || !strings.Contains(p.stdout.String(), "using token") {
		t.Errorf("the secret printed by the plugin is not redacted:\n%s", p.describe())
	}
	r := runFlow(t, tag, dir, 60*time.Second, "resume", "--state", "s.db")
	if r.code != 0 || !strings.Contains(r.stdout, `[marker.m["c"]] already present (out-c.txt)`) {
		t.Fatalf("resume:\n%s", r.desc)
	}
	if got := readFile(t, filepath.Join(dir, "writes.log")); strings.Count(got, "\n") != 3 {
		t.Errorf("writes.log = %q: want each file written once", got)
	}
	if strings.Contains(r.stderr, "Plugin changed") {
		t.Errorf("resume says the unchanged plugin changed:\n%s", r.desc)
	}
	r = runFlow(t, tag, dir, 60*time.Second, "destroy", "--state", "s.db", "--auto-approve")
	if r.code != 0 {
		t.Fatalf("destroy:\n%s", r.desc)
	}
	for _, f := range []string{"out-a.txt", "out-b.txt", "out-c.txt"} {
		if _, err := os.Stat(filepath.Join(dir, f)); !os.IsNotExist(err) {
			t.Errorf("%s after destroy: %v\n%s", f, err, r.desc)
		}
	}
}

// TestPluginChangedBinary: a plugin executable changed between a kill and the resume
// is named, with the instances that run with the new one.
func TestPluginChangedBinary(t *testing.T) {
	tag := newTag(t)
	dir := pluginFlow(t, "")
	p := startUntilMarkerC(t, tag, dir)
	p.signal(t, syscall.SIGKILL)
	p.wait(5 * time.Second)
	// A new build replaces the file, as go build does.
	bin := filepath.Join(dir, "flow-plugin-marker")
	b, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin+".new", append(b, "a new build"...), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(bin+".new", bin); err != nil {
		t.Fatal(err)
	}
	r := runFlow(t, tag, dir, 60*time.Second, "resume", "--state", "s.db")
	said := strings.Join(strings.Fields(r.stderr), " ")
	if r.code != 0 || !strings.Contains(said, "Plugin changed since the run started") ||
		!strings.Contains(said, "The resumed run uses the new executable for") || !strings.Contains(said, `marker.m["c"]`) {
		t.Errorf("resume after the plugin changed:\n%s", r.desc)
	}
}

// TestPluginCrash: a plugin that crashes on one instance fails that instance with its
// last stderr lines; the others finish.
func TestPluginCrash(t *testing.T) {
	tag := newTag(t)
	dir := pluginFlow(t, `plugin "marker" {
  source = "./flow-plugin-marker"
}
task "marker" "m" {
  for_each = toset(["a", "b", "c"])
  path     = "out-${each.key}.txt"
  content  = each.key
  delay    = each.key == "b" ? "500ms" : "0s"
  crash    = each.key == "b"
}
task "exec" "pause" {
  command = ["sleep", "1.5"]
}
task "marker" "later" {
  depends_on = [exec.pause]
  path       = "later.txt"
  content    = "after the crash"
}
`)
	r := runFlow(t, tag, dir, 60*time.Second, "run", "flow.hcl", "--state", "s.db")
	if r.code != 1 {
		t.Fatalf("run exited %d, want 1\n%s", r.code, r.desc)
	}
	tasks := status(t, tag, dir, "s.db").byAddress()
	b := tasks[`marker.m["b"]`]
	if b.Status != "failed" || !strings.Contains(b.Error, "marker: cannot go on with out-b.txt") || !strings.Contains(b.Error, "marker: exiting") {
		t.Errorf("m[b] = %+v, want failed with the plugin's last stderr lines", b)
	}
	for _, a := range []string{`marker.m["a"]`, `marker.m["c"]`, "marker.later"} {
		if tasks[a].Status != "succeeded" {
			t.Errorf("%s = %+v, want succeeded\n%s", a, tasks[a], r.desc)
		}
	}
}

// TestPluginHang: a plugin that hangs is ended by the task's timeout.
func TestPluginHang(t *testing.T) {
	tag := newTag(t)
	dir := pluginFlow(t, `plugin "marker" {
  source = "./flow-plugin-marker"
}
task "marker" "stuck" {
  path    = "stuck.txt"
  content = "never"
  hang    = true
  timeout = "1s"
}
task "marker" "fine" {
  path    = "fine.txt"
  content = "yes"
}
`)
	r := runFlow(t, tag, dir, 60*time.Second, "run", "flow.hcl", "--state", "s.db")
	if r.code != 1 {
		t.Fatalf("run exited %d, want 1\n%s", r.code, r.desc)
	}
	tasks := status(t, tag, dir, "s.db").byAddress()
	if s := tasks["marker.stuck"]; s.Status != "failed" || !strings.Contains(s.Error, "timed out after 1s") {
		t.Errorf("stuck = %+v, want failed by its timeout\n%s", s, r.desc)
	}
	if tasks["marker.fine"].Status != "succeeded" {
		t.Errorf("fine = %+v", tasks["marker.fine"])
	}
	if left := pluginProcs(tag, dir); len(left) > 0 {
		t.Errorf("plugin processes %v outlive flow", left)
	}
}

func readFileOr(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}

// TestPluginRefresh: a plugin type with a Check is refreshed like a built-in one: its
// file removed after the run, plan and resume say it drifted and the resume writes it
// again (issue 20, refresh).
func TestPluginRefresh(t *testing.T) {
	tag := newTag(t)
	dir := pluginFlow(t, `plugin "marker" {
  source = "./flow-plugin-marker"
}
task "marker" "m" {
  path    = "m.txt"
  content = "hello"
}
task "exec" "gate" {
  depends_on = [marker.m]
  script     = "test -f go"
}
`)
	flowExit(t, tag, dir, 1, "run", "flow.hcl", "--state", "s.db")
	remove(dir, "m.txt")
	plan := flowExit(t, tag, dir, 0, "plan", "flow.hcl", "--state", "s.db")
	if act, why := planned(plan.stdout); act["marker.m"] != "run" || why["marker.m"] != "drifted since it succeeded: it is gone" {
		t.Errorf("plan does not run marker.m again for its removed file:\n%s", plan.stdout)
	}
	touchGo(dir)
	r := flowExit(t, tag, dir, 0, "resume", "--state", "s.db")
	comparePlan(t, plan, r)
	if got := readFile(t, filepath.Join(dir, "m.txt")); got != "hello" {
		t.Errorf("m.txt = %q after the resume, want hello\n%s", got, r.desc)
	}
}

// TestPluginCrashRetry: each attempt's error carries the stderr of the process it
// used, not of the one before, and the retry note is a line of its own.
func TestPluginCrashRetry(t *testing.T) {
	tag := newTag(t)
	dir := pluginFlow(t, `plugin "marker" {
  source = "./flow-plugin-marker"
}
task "marker" "m" {
  path    = "out.txt"
  content = "x"
  crash   = true
  retry {
    attempts = 2
    delay    = "50ms"
  }
}
`)
	r := runFlow(t, tag, dir, 60*time.Second, "run", "flow.hcl", "--state", "s.db")
	if r.code != 1 {
		t.Fatalf("run exited %d, want 1\n%s", r.code, r.desc)
	}
	out := r.stdout + r.stderr
	if !strings.Contains(out, "\nmarker.m: retrying in ") || strings.Contains(out, "marker: exiting; retrying") {
		t.Errorf("the retry note is not on a line of its own:\n%s", r.desc)
	}
	m := status(t, tag, dir, "s.db").byAddress()["marker.m"]
	if m.Status != "failed" || strings.Count(m.Error, "marker: exiting") != 1 {
		t.Errorf("marker.m = %+v, want failed with one process's stderr (one 'marker: exiting')", m)
	}
}

// TestPluginStartFailure: a plugin that exits before its handshake is one error, on
// its block, with its stderr once and without go-plugin's guesses, and its task's
// type is not reported unknown besides.
func TestPluginStartFailure(t *testing.T) {
	tag := newTag(t)
	dir := pluginFlow(t, `plugin "py" {
  source = "./py-plugin"
}
task "json_file" "a" {
  path  = "a.json"
  value = 1
}
`)
	script := "#!/bin/sh\necho 'Traceback (most recent call last):' >&2\necho \"ModuleNotFoundError: No module named 'grpc'\" >&2\nexit 1\n"
	if err := os.WriteFile(filepath.Join(dir, "py-plugin"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	r := runFlow(t, tag, dir, 30*time.Second, "validate", "flow.hcl")
	out := r.stdout + r.stderr
	words := strings.Join(strings.Fields(out), " ")
	switch {
	case r.code != 2:
		t.Errorf("validate exited %d, want 2\n%s", r.code, r.desc)
	case strings.Count("\n"+out, "\nError: ") != 1 || !strings.Contains(out, "Error: Cannot use plugin"):
		t.Errorf("want one error, Cannot use plugin:\n%s", r.desc)
	case strings.Count(out, "No module named 'grpc'") != 1 || !strings.Contains(words, "it exited before its handshake"):
		t.Errorf("want the plugin's stderr once, after 'it exited before its handshake':\n%s", r.desc)
	case strings.Contains(out, "This usually means"):
		t.Errorf("go-plugin's guesses are shown:\n%s", r.desc)
	}
}
