package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// pluginJSON is a plugin as flow plugins --json, flow runs --json and flow status
// --json print it.
type pluginJSON struct {
	Name      string   `json:"name"`
	Path      string   `json:"path"`
	Sha256    string   `json:"sha256"`
	Types     []string `json:"types"`
	Instances []string `json:"instances"`
}

// runJSON is a run as flow runs --json prints it (docs/cli.md).
type runJSON struct {
	ID         uint64       `json:"id"`
	Status     string       `json:"status"`
	Flow       string       `json:"flow"`
	Dir        string       `json:"dir"`
	StartedAt  *time.Time   `json:"started_at"`
	FinishedAt *time.Time   `json:"finished_at"`
	Resumes    *int         `json:"resumes"`
	Destroys   *uint64      `json:"destroys"`
	Error      *string      `json:"error"`
	Plugins    []pluginJSON `json:"plugins"`
}

func decodeJSON(t *testing.T, r result, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(r.stdout), v); err != nil {
		t.Fatalf("decode: %v\n%s", err, r.desc)
	}
}

// rebuildPlugin replaces dir's flow-plugin-marker with a different executable, as a
// new build does (a new file renamed over the old), and returns the new sha256.
func rebuildPlugin(t *testing.T, dir string) string {
	t.Helper()
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
	return fileSum(t, bin)
}

// TestPluginCommandArgs (issue 39, item 10): flow plugins takes the flow as PATH, as
// the other commands do, and flow runs --json prints the runs as a JSON array with
// the fields docs/cli.md documents, each run's plugins among them.
func TestPluginCommandArgs(t *testing.T) {
	tag := newTag(t)
	dir := pluginFlow(t, "")
	sum := fileSum(t, filepath.Join(dir, "flow-plugin-marker"))
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"path", []string{"plugins", "flow.hcl"}, 0, sum},
		{"path and json", []string{"plugins", "flow.hcl", "--json"}, 0, `"sha256": "` + sum},
		{"--flow", []string{"plugins", "--flow", "flow.hcl"}, 0, sum},
		{"same path twice", []string{"plugins", "--flow", "flow.hcl", "flow.hcl"}, 0, sum},
		{"two paths", []string{"plugins", "flow.hcl", "other.hcl"}, 2, `takes PATH only; extra argument "other.hcl"`},
		{"path and another --flow", []string{"plugins", "--flow", "other.hcl", "flow.hcl"}, 2, "takes the flow once"},
		{"no flow", []string{"plugins"}, 2, "needs the flow: flow plugins PATH"},
	}
	for _, tt := range tests {
		r := flowExit(t, tag, dir, tt.code, tt.args...)
		if !strings.Contains(r.stdout+r.stderr, tt.want) {
			t.Errorf("%s: want %q\n%s", tt.name, tt.want, r.desc)
		}
	}

	flowExit(t, tag, dir, 0, "run", "flow.hcl", "--state", "s.db")
	flowExit(t, tag, dir, 0, "destroy", "--state", "s.db", "--auto-approve")
	var runs []runJSON
	decodeJSON(t, flowExit(t, tag, dir, 0, "runs", "--state", "s.db", "--json"), &runs)
	if len(runs) != 2 {
		t.Fatalf("runs --json: %d runs, want 2: %+v", len(runs), runs)
	}
	for i, r := range runs {
		if r.ID != uint64(i+1) || r.Status != "succeeded" || r.Flow != filepath.Join(dir, "flow.hcl") || r.Dir != dir ||
			r.StartedAt == nil || r.FinishedAt == nil || r.Resumes == nil || r.Destroys == nil || r.Error == nil {
			t.Errorf("run %d: %+v", i+1, r)
		}
		if len(r.Plugins) != 1 || r.Plugins[0].Name != "marker" || r.Plugins[0].Sha256 != sum || !slices.Equal(r.Plugins[0].Types, []string{"marker"}) {
			t.Errorf("run %d's plugins: %+v", i+1, r.Plugins)
		}
	}
	if *runs[1].Destroys != 1 || *runs[0].Destroys != 0 {
		t.Errorf("destroys: %d, %d", *runs[0].Destroys, *runs[1].Destroys)
	}
}

// TestPluginDestroyRecords (issue 39, item 7): a destroy whose plugin executable
// changed since the run warns as a resume does, naming what it undoes with the new
// one, and the destroy run records the plugins it used (flow runs, status --json).
func TestPluginDestroyRecords(t *testing.T) {
	tag := newTag(t)
	dir := pluginFlow(t, "")
	flowExit(t, tag, dir, 0, "run", "flow.hcl", "--state", "s.db")
	sum := rebuildPlugin(t, dir)
	r := flowExit(t, tag, dir, 0, "destroy", "--state", "s.db", "--auto-approve")
	said := strings.Join(strings.Fields(r.stderr), " ")
	if !strings.Contains(said, "Plugin changed since the run started") ||
		!strings.Contains(said, `The destroy undoes marker.m["a"], marker.m["b"], marker.m["c"] with the new executable.`) {
		t.Errorf("destroy after the plugin changed:\n%s", r.desc)
	}
	if r := flowExit(t, tag, dir, 0, "runs", "--state", "s.db"); !strings.Contains(r.stdout, "Run 2 used plugins:") || !strings.Contains(r.stdout, sum) {
		t.Errorf("flow runs names no plugin of the destroy:\n%s", r.desc)
	}
	var st struct {
		RunID    uint64       `json:"run_id"`
		Destroys uint64       `json:"destroys"`
		Plugins  []pluginJSON `json:"plugins"`
	}
	decodeJSON(t, flowExit(t, tag, dir, 0, "status", "--state", "s.db", "--json"), &st)
	if st.RunID != 2 || st.Destroys != 1 || len(st.Plugins) != 1 || st.Plugins[0].Sha256 != sum {
		t.Errorf("status --json of the destroy: %+v", st)
	}
}

// TestPluginResumeDigests (issue 39, item 8): after a kill, a changed plugin executable
// is named by flow plan before the resume, and the resumed run keeps both digests,
// each with the instances that ran with it (status --json).
func TestPluginResumeDigests(t *testing.T) {
	tag := newTag(t)
	// first's record is durable before second starts (second reads it); second is
	// killed after it wrote its file, before its checkpoint.
	dir := pluginFlow(t, `plugin "marker" {
  source = "./flow-plugin-marker"
}
task "marker" "first" {
  path    = "out-first.txt"
  content = "first"
  log     = "writes.log"
}
task "marker" "second" {
  path    = "out-second.txt"
  content = "after ${marker.first.path}"
  log     = "writes.log"
  after   = "60s"
}
`)
	old := fileSum(t, filepath.Join(dir, "flow-plugin-marker"))
	p := start(t, tag, dir, "run", "flow.hcl", "--state", "s.db")
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(readFileOr(filepath.Join(dir, "writes.log")), "out-second.txt") {
		if time.Now().After(deadline) || p.exited() {
			t.Fatalf("marker.second never wrote its file\n%s", p.describe())
		}
		time.Sleep(20 * time.Millisecond)
	}
	p.signal(t, syscall.SIGKILL)
	p.wait(5 * time.Second)
	sum := rebuildPlugin(t, dir)
	r := flowExit(t, tag, dir, 0, "plan", "flow.hcl", "--state", "s.db")
	said := strings.Join(strings.Fields(r.stderr), " ")
	if !strings.Contains(said, "Plugin changed since the run started") || !strings.Contains(said, "The resumed run uses the new executable for marker.second.") {
		t.Errorf("plan before the resume says nothing of the changed plugin:\n%s", r.desc)
	}
	flowExit(t, tag, dir, 0, "resume", "--state", "s.db")
	var st struct {
		Plugins []pluginJSON `json:"plugins"`
	}
	decodeJSON(t, flowExit(t, tag, dir, 0, "status", "--state", "s.db", "--json"), &st)
	ran := map[string][]string{}
	for _, pl := range st.Plugins {
		ran[pl.Sha256] = pl.Instances
	}
	if len(st.Plugins) != 2 || !slices.Equal(ran[old], []string{"marker.first"}) || !slices.Equal(ran[sum], []string{"marker.second"}) {
		t.Errorf("status --json: want %s for first, %s for second: %+v", old[:12], sum[:12], st.Plugins)
	}
	if r := flowExit(t, tag, dir, 0, "status", "--state", "s.db"); !strings.Contains(r.stdout, old) || !strings.Contains(r.stdout, sum) {
		t.Errorf("status names not both executables:\n%s", r.desc)
	}
}

// TestPluginRefusals (issue 39, item 9): a plugin whose #! interpreter is missing is
// refused naming the interpreter; a schema with an empty or twice-declared attribute or
// output name is refused naming the plugin; a type two plugins serve names both. The
// plugins are under testdata/plugin-bad, flow_plugin beside them.
func TestPluginRefusals(t *testing.T) {
	needPython(t)
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		plugins []string // plugin block NAME=FILE under testdata/plugin-bad
		want    string
	}{
		{"missing interpreter", []string{"fp9=python9"}, "its interpreter /usr/bin/python9 (its #! line) does not exist"},
		{"duplicate attribute", []string{"fp=dup-attr"}, `plugin "fp" (` + "%DIR%/dup-attr): task type \"fp\": attribute \"name\" is declared twice"},
		{"empty attribute", []string{"fp=empty-attr"}, `task type "fp": an attribute with an empty name`},
		{"duplicate output", []string{"fp=dup-output"}, `task type "fp": output "text" is declared twice`},
		{"type of two plugins", []string{"one=greet", "two=greet"}, `plugin "two" serves the task type "greet", which plugin "one" serves already`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tag := newTag(t)
			dir := t.TempDir()
			if err := os.Symlink(filepath.Join(root, "plugins", "python", "flow_plugin"), filepath.Join(dir, "flow_plugin")); err != nil {
				t.Fatal(err)
			}
			var flow strings.Builder
			for _, p := range tt.plugins {
				name, file, _ := strings.Cut(p, "=")
				b, err := os.ReadFile(testdata(t, filepath.Join("plugin-bad", file)))
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, file), b, 0o755); err != nil {
					t.Fatal(err)
				}
				flow.WriteString("plugin \"" + name + "\" {\n  source = \"./" + file + "\"\n}\n")
			}
			if err := os.WriteFile(filepath.Join(dir, "flow.hcl"), []byte(flow.String()), 0o644); err != nil {
				t.Fatal(err)
			}
			r := flowExit(t, tag, dir, 2, "validate", "flow.hcl")
			said := strings.Join(strings.Fields(r.stderr), " ")
			if want := strings.ReplaceAll(tt.want, "%DIR%", dir); !strings.Contains(said, want) {
				t.Errorf("want %q\n%s", want, r.desc)
			}
		})
	}
}

// TestPluginStderrInLogs (issue 39, item 9): what a plugin writes to its stderr during
// a call, without crashing, is in flow logs of the instance whose call was in flight,
// and in flow's log at --log-level debug.
func TestPluginStderrInLogs(t *testing.T) {
	needPython(t)
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	tag := newTag(t)
	dir := t.TempDir()
	if err := os.Symlink(filepath.Join(root, "plugins", "python", "flow_plugin"), filepath.Join(dir, "flow_plugin")); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(testdata(t, "plugin/chatty"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "chatty"), b, 0o755); err != nil {
		t.Fatal(err)
	}
	flow := "plugin \"chatty\" {\n  source = \"./chatty\"\n}\ntask \"chatty\" \"x\" {\n  name = \"x\"\n}\n"
	if err := os.WriteFile(filepath.Join(dir, "flow.hcl"), []byte(flow), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := flowExit(t, tag, dir, 0, "run", "flow.hcl", "--state", "s.db"); strings.Contains(r.stderr, "[DEBUG]") {
		t.Errorf("a run at the default log level logs at debug:\n%s", r.desc)
	}
	r := flowExit(t, tag, dir, 0, "logs", "chatty.x", "--state", "s.db")
	if !strings.Contains(r.stdout, "plugin stderr: chatty: about to greet x") || !strings.Contains(r.stdout, "hello x") {
		t.Errorf("flow logs lacks the plugin's stderr line:\n%s", r.desc)
	}
	// At --log-level debug, flow's log has the plugin's stderr lines, named after it.
	r = flowExit(t, tag, dir, 0, "run", "flow.hcl", "--state", "s.db", "--new", "--log-level", "debug")
	if !strings.Contains(r.stderr, "[DEBUG] plugin.chatty") || !strings.Contains(r.stderr, ": chatty: about to greet x") {
		t.Errorf("--log-level debug shows not the plugin's stderr:\n%s", r.desc)
	}
}
