package cli

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/flowdev/flow/tasks"
	"github.com/flowdev/flow/tasks/exec"
	"github.com/flowdev/flow/tasks/process"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

func testRegistry(t *testing.T) *tasks.Registry {
	t.Helper()
	reg := tasks.NewRegistry()
	if err := exec.Register(reg); err != nil {
		t.Fatal(err)
	}
	if err := process.Register(reg); err != nil {
		t.Fatal(err)
	}
	return reg
}

// result is one in-process invocation, as the flow binary would show it.
type result struct {
	stdout, stderr string
	code           int
	err            error
}

// transcript renders a result for a golden file.
func (r result) transcript(args []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "$ flow %s\n", strings.Join(args, " "))
	if r.stdout != "" {
		fmt.Fprintf(&b, "--- stdout\n%s", r.stdout)
		if !strings.HasSuffix(r.stdout, "\n") {
			b.WriteString("\n")
		}
	}
	if r.stderr != "" {
		fmt.Fprintf(&b, "--- stderr\n%s", r.stderr)
		if !strings.HasSuffix(r.stderr, "\n") {
			b.WriteString("\n")
		}
	}
	fmt.Fprintf(&b, "--- exit %d\n", r.code)
	return b.String()
}

// harness runs the CLI in process with a state file in a temporary directory.
type harness struct {
	t     *testing.T
	tmp   string
	state string
	log   strings.Builder // transcript of every invocation, for one golden file
	// input is what the next invocations read on stdin, terminal whether they take
	// it for a terminal.
	input    string
	terminal bool
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	tmp := t.TempDir()
	return &harness{t: t, tmp: tmp, state: filepath.Join(tmp, "state.db")}
}

// flow runs flow ARGS --state STATE and records the normalised transcript. Like main,
// it prints an error to stderr unless the command already reported it.
func (h *harness) flow(args ...string) result {
	h.t.Helper()
	var stdout, stderr bytes.Buffer
	full := append(append([]string{}, args...), "--state", h.state)
	c := New(testRegistry(h.t), &stdout, &stderr)
	c.stdin, c.stdinTerminal = strings.NewReader(h.input), h.terminal
	err := c.Execute(full)
	if err != nil && !Reported(err) {
		fmt.Fprintln(&stderr, "flow:", err)
	}
	r := result{stdout: h.normalize(stdout.String()), stderr: h.normalize(stderr.String()), code: ExitCode(err), err: err}
	shown := make([]string, len(args))
	for i, a := range args {
		shown[i] = h.normalize(a)
	}
	h.log.WriteString(r.transcript(shown))
	h.log.WriteString("\n")
	return r
}

// expect runs flow and checks the exit code.
func (h *harness) expect(code int, args ...string) result {
	h.t.Helper()
	r := h.flow(args...)
	if r.code != code {
		h.t.Errorf("flow %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), r.code, code, r.stdout, r.stderr)
	}
	return r
}

var (
	durationRE  = regexp.MustCompile(`\b\d+(\.\d+)?(ns|µs|us|ms|s|m|h)\b`)
	timestampRE = regexp.MustCompile(`\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)?`)
	// padRE is the padding after a duration in a table (flow runs), which depends on
	// the duration's length.
	padRE = regexp.MustCompile(`<dur> {2,}`)
)

// normalize replaces what differs between runs: the temporary directory, the package
// directory, durations and timestamps.
func (h *harness) normalize(s string) string {
	for _, dir := range []string{h.tmp, evalSymlinks(h.tmp)} {
		s = strings.ReplaceAll(s, dir, "$TMP")
	}
	if wd, err := os.Getwd(); err == nil {
		s = strings.ReplaceAll(s, wd, "$PKG")
	}
	s = timestampRE.ReplaceAllString(s, "<time>")
	s = durationRE.ReplaceAllString(s, "<dur>")
	return padRE.ReplaceAllString(s, "<dur>  ")
}

func evalSymlinks(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return p
}

// golden compares got with testdata/golden/NAME, or writes it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./cmd/flow/cli/ -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs (run with -update to accept):\n%s", path, lineDiff(string(want), got))
	}
}

// lineDiff shows the first differing lines, enough to see what changed.
func lineDiff(want, got string) string {
	wl, gl := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	for i := 0; i < len(wl) || i < len(gl); i++ {
		var w, g string
		if i < len(wl) {
			w = wl[i]
		}
		if i < len(gl) {
			g = gl[i]
		}
		if w != g {
			fmt.Fprintf(&b, "line %d:\n  want: %q\n  got:  %q\n", i+1, w, g)
			if b.Len() > 2000 {
				break
			}
		}
	}
	return b.String()
}

// copyFlow copies testdata/flows/NAME into the temporary directory.
func (h *harness) copyFlow(name, as string) string {
	h.t.Helper()
	src, err := os.ReadFile(filepath.Join("testdata", "flows", name))
	if err != nil {
		h.t.Fatal(err)
	}
	dst := filepath.Join(h.tmp, as)
	if err := os.WriteFile(dst, src, 0o644); err != nil {
		h.t.Fatal(err)
	}
	return dst
}

func flowPath(name string) string { return filepath.Join("testdata", "flows", name) }

func TestTasks(t *testing.T) {
	h := newHarness(t)
	r := h.expect(ExitOK, "tasks")
	if !strings.HasPrefix(r.stdout, "TYPE          FLOW DESTROY  SUMMARY\nexec          with undo     Run a local command or shell script\n") {
		t.Errorf("tasks: %q", r.stdout)
	}
	r = h.expect(ExitOK, "tasks", "exec")
	for _, want := range []string{"Attributes:", "command", "list(string)", "ok_exit_codes", "Outputs:", "exit_code", "Undo (flow destroy): flow destroy runs the task's undo script", "Example:"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("tasks exec lacks %q", want)
		}
	}
	r = h.expect(ExitInvalid, "tasks", "exce")
	if !strings.Contains(r.stderr, `no task type "exce". Did you mean "exec"? Known types: exec, process, process_stop`) {
		t.Errorf("tasks exce: %q", r.stderr)
	}
	golden(t, "tasks.txt", h.log.String())
}

func TestValidate(t *testing.T) {
	h := newHarness(t)
	r := h.expect(ExitOK, "validate", flowPath("quick.hcl"))
	if r.stdout != "testdata/flows/quick.hcl is valid: 5 tasks, 7 instances.\n" || r.stderr != "" {
		t.Errorf("validate quick.hcl: %+v", r)
	}
	r = h.expect(ExitInvalid, "validate", flowPath("invalid.hcl"))
	if r.stdout != "" {
		t.Errorf("validate invalid.hcl wrote to stdout: %q", r.stdout)
	}
	// Every error with file:line and the source line it points at, in one pass.
	for _, want := range []string{
		`Error: Unknown task type`,
		`on testdata/flows/invalid.hcl line 6, in task "exce" "build":`,
		`   6: task "exce" "build" {`,
		`Did you mean "exec"?`,
		`Error: Reference to undeclared variable`,
		`on testdata/flows/invalid.hcl line 11, in task "exec" "test":`,
		`  11:   command = ["echo", exec.build.stdout, var.member]`,
		`Did you mean "members"?`,
		`Error: Reference to undeclared task`,
	} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("validate invalid.hcl: stderr lacks %q", want)
		}
	}
	if r.err == nil || r.err.Error() != "the flow is invalid (3 errors)" || !Reported(r.err) {
		t.Errorf("err = %v", r.err)
	}
	h.expect(ExitInvalid, "validate", flowPath("nope.hcl"))
	h.expect(ExitInvalid, "validate")
	h.expect(ExitInvalid, "validate", flowPath("quick.hcl"), "--var", "nope=1")
	// Validate accepts a flow whose required variables have no value yet.
	h.expect(ExitOK, "validate", flowPath("quick.hcl"), "--var", `members=["a","b","c"]`)
	if _, err := os.Stat(h.state); err == nil {
		t.Error("validate created the state file")
	}
	golden(t, "validate.txt", h.log.String())
}

// TestValidateReportsEverything: a flow with mistakes of every phase (decoding, the
// reference checks, expanding, type checking) gets all of them from one flow validate,
// each once, on its own line and column, as text and as JSON; run refuses it with the
// same list.
func TestValidateReportsEverything(t *testing.T) {
	h := newHarness(t)
	path := flowPath("invalid_all.hcl")
	r := h.expect(ExitInvalid, "validate", path)
	if r.err == nil || r.err.Error() != "the flow is invalid (10 errors)" {
		t.Errorf("err = %v, want 10 errors", r.err)
	}
	js := h.expect(ExitInvalid, "validate", "--json", path)
	var doc validateDoc
	if err := json.Unmarshal([]byte(js.stdout), &doc); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range doc.Diagnostics {
		got = append(got, fmt.Sprintf("%d:%d %s", d.Range.Start.Line, d.Range.Start.Column, d.Summary))
	}
	want := []string{
		"5:13 Invalid default value",
		"9:3 Unsupported argument",
		"15:44 Reference to undeclared variable",
		"15:24 Reference to undeclared task",
		"14:17 Reference to undeclared task",
		"20:14 Invalid for_each",
		"16:16 Incorrect attribute value type",
		"10:13 Incorrect attribute value type",
		"27:14 Incorrect attribute value type",
		"28:14 Incorrect attribute value type",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") || doc.ErrorCount != len(want) {
		t.Errorf("validate --json: %d errors:\n%s\nwant:\n%s", doc.ErrorCount, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	run := h.expect(ExitInvalid, "run", path)
	if run.stderr != r.stderr {
		t.Errorf("run reports otherwise than validate:\n%s", run.stderr)
	}
	golden(t, "validate_all.txt", h.log.String())
}

func TestGraph(t *testing.T) {
	h := newHarness(t)
	text := h.expect(ExitOK, "graph", flowPath("quick.hcl"))
	if !strings.Contains(text.stdout, "exec.configure[\"m1\"]\n  exec.launch[\"m1\"]\n") {
		t.Errorf("text graph lacks the per-instance edge:\n%s", text.stdout)
	}
	dot := h.expect(ExitOK, "graph", flowPath("quick.hcl"), "--format", "dot")
	if !strings.HasPrefix(dot.stdout, "digraph flow {") || !strings.Contains(dot.stdout, `"exec.launch[\"m2\"]" -> "exec.configure[\"m2\"]";`) {
		t.Errorf("dot graph:\n%s", dot.stdout)
	}
	if strings.Contains(dot.stdout, `"exec.launch[\"m1\"]" -> "exec.configure[\"m2\"]"`) {
		t.Error("dot graph has a cross-member edge")
	}
	mermaid := h.expect(ExitOK, "graph", flowPath("quick.hcl"), "--format", "mermaid")
	if !strings.HasPrefix(mermaid.stdout, "flowchart LR\n") || !strings.Contains(mermaid.stdout, `["exec.launch[#quot;m1#quot;]"]`) {
		t.Errorf("mermaid graph:\n%s", mermaid.stdout)
	}
	h.expect(ExitInvalid, "graph", flowPath("quick.hcl"), "--format", "svg")
	h.expect(ExitInvalid, "graph", flowPath("invalid.hcl"))
	golden(t, "graph.txt", h.log.String())
}

func TestPlanBeforeRun(t *testing.T) {
	h := newHarness(t)
	r := h.expect(ExitOK, "plan", flowPath("quick.hcl"))
	if !strings.HasPrefix(r.stdout, "A new run would:\n") || !strings.HasSuffix(r.stdout, "7 instances: 7 to run, 0 to skip, 0 decided at run time.\n") {
		t.Errorf("plan:\n%s", r.stdout)
	}
	if _, err := os.Stat(h.state); err == nil {
		t.Error("plan created the state file")
	}
	golden(t, "plan.txt", h.log.String())
}

// statusContract checks the keys of `flow status --json`, which scripts rely on.
func statusContract(t *testing.T, out string) map[string]any {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("status --json: %v\n%s", err, out)
	}
	for _, k := range []string{"run_id", "flow", "status", "tasks"} {
		if _, ok := doc[k]; !ok {
			t.Errorf("status --json lacks %q", k)
		}
	}
	if _, ok := doc["run_id"].(float64); !ok {
		t.Errorf("run_id = %#v, want a number", doc["run_id"])
	}
	// The path is absolute: normalize turned it into $TMP/... or $PKG/...
	if f, _ := doc["flow"].(string); !strings.HasPrefix(f, "$TMP/") && !strings.HasPrefix(f, "$PKG/") {
		t.Errorf("flow = %#v, want an absolute path", doc["flow"])
	}
	list, ok := doc["tasks"].([]any)
	if !ok || len(list) == 0 {
		t.Fatalf("tasks = %#v", doc["tasks"])
	}
	for _, item := range list {
		task := item.(map[string]any)
		for _, k := range []string{"address", "status", "attempts", "started_at", "finished_at", "error"} {
			if _, ok := task[k]; !ok {
				t.Errorf("task %v lacks %q", task["address"], k)
			}
		}
		if _, ok := task["attempts"].(float64); !ok {
			t.Errorf("attempts of %v = %#v", task["address"], task["attempts"])
		}
		if _, ok := task["error"].(string); !ok {
			t.Errorf("error of %v = %#v", task["address"], task["error"])
		}
		for _, k := range []string{"started_at", "finished_at"} {
			if v := task[k]; v != nil {
				if _, ok := v.(string); !ok {
					t.Errorf("%s of %v = %#v", k, task["address"], v)
				}
			}
		}
	}
	return doc
}

func TestRunStatusLogs(t *testing.T) {
	h := newHarness(t)
	r := h.expect(ExitOK, "run", flowPath("quick.hcl"), "--parallelism", "1")
	if strings.Contains(r.stdout, "hunter2-secret") || !strings.Contains(r.stdout, "[exec.secret] token is (sensitive)") {
		t.Errorf("run output does not redact the secret:\n%s", r.stdout)
	}
	if !strings.Contains(r.stdout, `joined = "joined m1,m2"`) {
		t.Errorf("run output lacks the output value:\n%s", r.stdout)
	}
	h.expect(ExitOK, "status")
	js := h.expect(ExitOK, "status", "--json")
	doc := statusContract(t, js.stdout)
	if doc["status"] != "succeeded" || doc["run_id"] != float64(1) {
		t.Errorf("status --json: %v %v", doc["status"], doc["run_id"])
	}
	for _, item := range doc["tasks"].([]any) {
		task := item.(map[string]any)
		if task["status"] != "succeeded" || task["attempts"] != float64(1) || task["started_at"] == nil || task["finished_at"] == nil || task["error"] != "" {
			t.Errorf("task %v", task)
		}
	}
	h.expect(ExitOK, "runs")
	r = h.expect(ExitOK, "logs", `exec.launch["m2"]`)
	if r.stdout != "launching m2\n" {
		t.Errorf("logs: %q", r.stdout)
	}
	h.expect(ExitOK, "logs", `exec.launch[m1]`) // the shell ate the quotes
	r = h.expect(ExitOK, "logs", "exec.secret")
	if r.stdout != "token is (sensitive)\n" {
		t.Errorf("logs of the secret task: %q", r.stdout)
	}
	h.expect(ExitInvalid, "logs", "exec.nope")
	h.expect(ExitInvalid, "status", "--run", "7")
	// The latest run succeeded: resume says so and exits 0, and run starts run 2.
	h.expect(ExitOK, "resume")
	r = h.expect(ExitOK, "run", flowPath("quick.hcl"), "--parallelism", "1", "--var", `members=["m3"]`)
	if !strings.HasPrefix(r.stdout, "Starting run 2 of testdata/flows/quick.hcl: 5 task instances, parallelism 1\n") {
		t.Errorf("second run:\n%s", r.stdout)
	}
	h.expect(ExitOK, "status", "--run", "1")
	h.expect(ExitOK, "runs")
	golden(t, "run.txt", h.log.String())
}

// TestStatusWithoutState: every command that needs an existing state file refuses
// without one, and creates nothing (neither the file nor its directory); a destroy
// says there is nothing to destroy, which is no failure.
func TestStatusWithoutState(t *testing.T) {
	h := newHarness(t)
	h.state = filepath.Join(h.tmp, "sub", "state.db")
	for _, args := range [][]string{{"status"}, {"runs"}, {"logs", "exec.a"}, {"resume"},
		{"output"}, {"destroy", "--auto-approve"}, {"destroy"}, {"plan", "--destroy"}} {
		if args[0] == "destroy" {
			if r := h.expect(ExitOK, args...); !strings.HasPrefix(r.stdout, "Nothing to destroy: there is no state file") {
				t.Errorf("%v: %q", args, r.stdout)
			}
			continue
		}
		r := h.expect(ExitInvalid, args...)
		if !strings.Contains(r.stderr, "flow: ") {
			t.Errorf("%v: %q", args, r.stderr)
		}
		if entries, _ := os.ReadDir(h.tmp); len(entries) != 0 {
			t.Fatalf("flow %v created %v", args, entries)
		}
	}
	golden(t, "nostate.txt", h.log.String())
}

func TestFailRefuseResume(t *testing.T) {
	h := newHarness(t)
	flow := h.copyFlow("fail.hcl", "fail.hcl")

	r := h.expect(ExitTaskFailed, "run", flow, "--parallelism", "1")
	summary := r.stdout[strings.LastIndex(r.stdout, "\n\nFirst failure:")+2:]
	if !strings.HasPrefix(summary, "First failure: exec.build: script exited with code 3\nLast output of exec.build:\n") ||
		!strings.Contains(summary, "  | error: missing semicolon\n") {
		t.Errorf("summary does not start with the first failure and its output:\n%s", r.stdout)
	}
	if !strings.Contains(r.stdout, "exec.test: skipped: dependency exec.build failed") ||
		!strings.Contains(r.stdout, "exec.deploy: skipped: dependency exec.test was skipped (exec.build failed)") {
		t.Errorf("dependents not skipped:\n%s", r.stdout)
	}
	if r.err == nil || !Reported(r.err) {
		t.Errorf("err = %v", r.err)
	}
	h.expect(ExitOK, "status")
	doc := statusContract(t, h.expect(ExitOK, "status", "--json").stdout)
	want := map[string][2]any{ // status, attempts
		"exec.build": {"failed", float64(2)}, "exec.deploy": {"skipped", float64(0)},
		"exec.docs": {"succeeded", float64(1)}, "exec.fetch": {"succeeded", float64(1)},
		"exec.test": {"skipped", float64(0)},
	}
	for _, item := range doc["tasks"].([]any) {
		task := item.(map[string]any)
		w := want[task["address"].(string)]
		if task["status"] != w[0] || task["attempts"] != w[1] {
			t.Errorf("%v: status %v attempts %v, want %v", task["address"], task["status"], task["attempts"], w)
		}
	}
	if doc["status"] != "failed" {
		t.Errorf("run status %v", doc["status"])
	}
	h.expect(ExitOK, "logs", "exec.build")

	// An unfinished run blocks a new one.
	r = h.expect(ExitInvalid, "run", flow, "--parallelism", "1")
	if !strings.Contains(r.stderr, `did not finish: it is failed; continue it with "flow resume --state $TMP/state.db" or start over with "flow run --new $TMP/fail.hcl --state $TMP/state.db"`) {
		t.Errorf("second run: %q", r.stderr)
	}

	// Fix the flow and resume: what succeeded is up to date, the rest runs.
	broken, err := os.ReadFile(flow)
	if err != nil {
		t.Fatal(err)
	}
	failing := `script     = "echo 'error: missing semicolon' >&2; exit 3"`
	if !bytes.Contains(broken, []byte(failing)) {
		t.Fatalf("fail.hcl no longer has the failing build line %s", failing)
	}
	fixed := bytes.Replace(broken, []byte(failing), []byte(`script     = "echo compiling; echo built"`), 1)
	if err := os.WriteFile(flow, fixed, 0o644); err != nil {
		t.Fatal(err)
	}
	h.expect(ExitOK, "plan", flow)
	r = h.expect(ExitOK, "resume", "--parallelism", "1")
	for _, want := range []string{
		"exec.docs: up to date (succeeded before with the same inputs)",
		"exec.fetch: up to date (succeeded before with the same inputs)",
		"[exec.build] compiling\n[exec.build] built\n",
		"[exec.test] testing compiling\n[exec.test] built\n",
		"Run 1 succeeded in <dur>: 5 succeeded (2 up to date).",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("resume lacks %q:\n%s", want, r.stdout)
		}
	}
	h.expect(ExitOK, "status")
	h.expect(ExitOK, "runs")
	h.expect(ExitOK, "resume")
	golden(t, "fail_resume.txt", h.log.String())
}

// TestRunCreatesState: the first run creates the state file with its run in it; a
// flow that does not load leaves no state file behind.
func TestRunCreatesState(t *testing.T) {
	h := newHarness(t)
	h.expect(ExitInvalid, "run", flowPath("invalid.hcl"))
	if _, err := os.Stat(h.state); !os.IsNotExist(err) {
		t.Errorf("an invalid flow left a state file: %v", err)
	}
	r := h.expect(ExitOK, "run", flowPath("quick.hcl"), "--parallelism", "1")
	if !strings.HasPrefix(r.stdout, "Starting run 1 of testdata/flows/quick.hcl: ") {
		t.Errorf("first run:\n%s", r.stdout)
	}
	doc := statusContract(t, h.expect(ExitOK, "status", "--json").stdout)
	if doc["status"] != "succeeded" || doc["run_id"] != float64(1) {
		t.Errorf("status --json: %v %v", doc["status"], doc["run_id"])
	}
}

// TestRunNew: --new abandons an unfinished run.
func TestRunNew(t *testing.T) {
	h := newHarness(t)
	flow := h.copyFlow("fail.hcl", "fail.hcl")
	h.expect(ExitTaskFailed, "run", flow, "--parallelism", "1", "--fail-fast")
	r := h.expect(ExitTaskFailed, "run", flow, "--parallelism", "1", "--new")
	if !strings.HasPrefix(r.stdout, "Starting run 2 of ") {
		t.Errorf("run --new:\n%s", r.stdout)
	}
}

func TestFmt(t *testing.T) {
	h := newHarness(t)
	path := h.copyFlow("unformatted.hcl", "unformatted.hcl")
	orig, _ := os.ReadFile(path)

	r := h.expect(ExitTaskFailed, "fmt", "--check", path)
	if !strings.HasPrefix(r.stdout, "$TMP/unformatted.hcl\n--- $TMP/unformatted.hcl\n+++ $TMP/unformatted.hcl (formatted)\n@@") {
		t.Errorf("fmt --check lacks the name and a diff: %q", r.stdout)
	}
	if now, _ := os.ReadFile(path); !bytes.Equal(now, orig) {
		t.Error("fmt --check changed the file")
	}
	h.expect(ExitOK, "fmt", path)
	formatted, _ := os.ReadFile(path)
	golden(t, "unformatted.formatted.hcl", string(formatted))
	h.expect(ExitOK, "fmt", "--check", path)
	h.expect(ExitOK, "fmt", path)
	if again, _ := os.ReadFile(path); !bytes.Equal(again, formatted) {
		t.Error("fmt is not idempotent")
	}
	// A directory: every .hcl file in it.
	h.copyFlow("unformatted.hcl", "second.hcl")
	h.expect(ExitTaskFailed, "fmt", "--check", h.tmp)
	// A file that does not parse is never rewritten.
	broken := h.copyFlow("broken.hcl", "broken.hcl")
	before, _ := os.ReadFile(broken)
	h.expect(ExitInvalid, "fmt", broken)
	if after, _ := os.ReadFile(broken); !bytes.Equal(before, after) {
		t.Error("fmt rewrote a file that does not parse")
	}
	h.expect(ExitInvalid, "fmt", filepath.Join(h.tmp, "missing.hcl"))
	golden(t, "fmt.txt", h.log.String())
}

func TestUsageErrors(t *testing.T) {
	h := newHarness(t)
	h.expect(ExitInvalid, "nope")
	h.expect(ExitInvalid, "run")
	h.expect(ExitInvalid, "run", flowPath("quick.hcl"), "--parallelism", "many")
	h.expect(ExitInvalid, "resume", "extra")
	golden(t, "usage.txt", h.log.String())
}

// TestParallelismAtLeastOne: --parallelism 0 or less is a usage error naming the flag,
// on every command that takes it, and nothing is run or created.
func TestParallelismAtLeastOne(t *testing.T) {
	h := newHarness(t)
	for _, args := range [][]string{
		{"run", flowPath("quick.hcl"), "--parallelism", "0"},
		{"run", flowPath("quick.hcl"), "--parallelism=-2"},
		{"resume", "--parallelism", "0"},
		{"resume", "--parallelism=-1"},
		{"destroy", "--auto-approve", "--parallelism", "0"},
		{"destroy", "--parallelism=-5"},
	} {
		r := h.expect(ExitInvalid, args...)
		if !strings.Contains(r.stderr, "--parallelism must be at least 1") || r.stdout != "" {
			t.Errorf("flow %s: stdout %q, stderr %q; want a usage error naming --parallelism", strings.Join(args, " "), r.stdout, r.stderr)
		}
		if _, err := os.Stat(h.state); !os.IsNotExist(err) {
			t.Fatalf("flow %s created the state file", strings.Join(args, " "))
		}
	}
}

func TestExitCode(t *testing.T) {
	if ExitCode(nil) != ExitOK {
		t.Error("nil")
	}
	if ExitCode(fmt.Errorf("cobra: %w", fail(ExitInterrupted, fmt.Errorf("x")))) != ExitInterrupted {
		t.Error("wrapped exitError")
	}
	if ExitCode(fmt.Errorf("unknown flag")) != ExitInvalid {
		t.Error("plain error")
	}
}

// TestResumeInputsChanged: on resume an instance whose evaluated inputs changed runs
// again and says which inputs; one that only waits for it is decided at run time and
// stays up to date when what it reads comes out the same.
func TestResumeInputsChanged(t *testing.T) {
	h := newHarness(t)
	flow := filepath.Join(h.tmp, "f.hcl")
	write := func(docsCmd, breakIt string) {
		t.Helper()
		src := `
variable "who" {
  default = "alice"
}

task "exec" "docs" {
  command = ["echo", "` + docsCmd + `"]
}

task "exec" "index" {
  command = ["echo", "indexed", exec.docs.exit_code]
}

task "exec" "greet" {
  command = ["echo", "hi", var.who]
}

task "exec" "fragile" {
  depends_on = [exec.greet]
  script     = "` + breakIt + `"
}
`
		if err := os.WriteFile(flow, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("docs v1", "exit 1")
	h.expect(ExitTaskFailed, "run", flow, "--parallelism", "1", "--var", "who=bob")

	write("docs v2", "echo fine")
	r := h.expect(ExitOK, "plan", flow)
	for _, want := range []string{
		"Resuming run 1 would:",
		"run   exec.docs     inputs changed since it succeeded (command)",
		"run?  exec.index    succeeded before; waits for exec.docs, which runs",
		// The recorded value of who (bob) is used again, so greet is unchanged.
		"skip  exec.greet    up to date: succeeded in run 1 with the same inputs",
		"run   exec.fragile  previous attempt failed",
		"4 instances: 2 to run, 1 to skip, 1 decided at run time.",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("plan lacks %q:\n%s", want, r.stdout)
		}
	}
	r = h.expect(ExitOK, "resume", "--parallelism", "1")
	for _, want := range []string{
		"exec.docs: inputs changed since it succeeded (command); running it",
		"[exec.docs] docs v2",
		"exec.index: up to date (succeeded before with the same inputs)",
		"exec.greet: up to date (succeeded before with the same inputs)",
		"Run 1 succeeded in <dur>: 4 succeeded (2 up to date).",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("resume lacks %q:\n%s", want, r.stdout)
		}
	}
}

// TestResumeVarOverride: a --var given to resume replaces the recorded value, and what
// reads it runs again.
func TestResumeVarOverride(t *testing.T) {
	h := newHarness(t)
	flow := filepath.Join(h.tmp, "f.hcl")
	src := `
variable "who" {
  default = "alice"
}

task "exec" "greet" {
  command = ["echo", "hi", var.who]
}

task "exec" "fail" {
  script = "exit 1"
}
`
	if err := os.WriteFile(flow, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	h.expect(ExitTaskFailed, "run", flow, "--parallelism", "1", "--var", "who=bob")
	r := h.expect(ExitTaskFailed, "resume", "--parallelism", "1", "--var", "who=carol")
	if !strings.Contains(r.stdout, "exec.greet: inputs changed since it succeeded (command); running it") ||
		!strings.Contains(r.stdout, "[exec.greet] hi carol") {
		t.Errorf("resume with --var:\n%s", r.stdout)
	}
}

// TestDeepNesting: a flow nested 100,000 brackets deep, which killed flow with a
// stack overflow in HCL's parser, is an invalid flow for every command that reads it:
// one diagnostic naming the line and column, exit 2, nothing created or rewritten.
func TestDeepNesting(t *testing.T) {
	h := newHarness(t)
	src := "locals {\n x = " + strings.Repeat("[", 100000) + strings.Repeat("]", 100000) + "\n}\n"
	path := filepath.Join(h.tmp, "deep.hcl")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"validate", path}, {"plan", path}, {"run", path}, {"graph", path}, {"fmt", path}, {"fmt", "--check", h.tmp}} {
		r := h.expect(ExitInvalid, args...)
		if !strings.Contains(r.stderr, "Error: Nesting too deep") || !strings.Contains(r.stderr, "At line 2, column 1005,") ||
			strings.Count(r.stderr, "Error:") != 1 {
			t.Errorf("flow %s: stderr %.500q", strings.Join(args, " "), r.stderr)
		}
	}
	if now, _ := os.ReadFile(path); string(now) != src {
		t.Error("fmt rewrote the file")
	}
	if _, err := os.Stat(h.state); !os.IsNotExist(err) {
		t.Error("a state file was created")
	}
	r := h.expect(ExitInvalid, "validate", "--json", path)
	for _, want := range []string{`"summary": "Nesting too deep"`, `"line": 2`, `"column": 1005`} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("validate --json lacks %s:\n%s", want, r.stdout)
		}
	}
}
