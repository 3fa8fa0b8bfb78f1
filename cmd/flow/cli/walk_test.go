package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The tests in this file pin the smaller items of issue 27's walk through the CLI.

// TestVariableValueErrors: a --var of the wrong type names the variable, the type it
// wants and the value given (never "source code not available"); an error in a
// --var-file shows the file's line; a sensitive value is never shown.
func TestVariableValueErrors(t *testing.T) {
	h := newHarness(t)
	flow := flowPath("quick.hcl")
	vars := filepath.Join(h.tmp, "vars.hcl")
	if err := os.WriteFile(vars, []byte("# a comment\nmembers = 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	broken := filepath.Join(h.tmp, "broken.hcl")
	if err := os.WriteFile(broken, []byte("members = [\"a\" \"b\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(h.tmp, "secret.hcl")
	if err := os.WriteFile(secret, []byte("token = [\"hunter3-secret\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args []string
		want []string
	}{
		{[]string{"validate", flow, "--var", "members=abc"},
			[]string{`--var members: variable "members" wants a value of type set(string); "abc" is not one`}},
		{[]string{"validate", flow, "--var-file", vars},
			[]string{"on $TMP/vars.hcl line 2:", "2: members = 3", "does not match its type"}},
		{[]string{"validate", flow, "--var-file", broken},
			[]string{"on $TMP/broken.hcl line", `1: members = ["a" "b"]`}},
		{[]string{"validate", flow, "--var-file", secret},
			[]string{`$TMP/secret.hcl:1: the value given for sensitive variable "token" (not shown)`}},
	}
	for _, tt := range tests {
		r := h.expect(ExitInvalid, tt.args...)
		for _, w := range tt.want {
			if !strings.Contains(strings.Join(strings.Fields(r.stderr), " "), w) {
				t.Errorf("flow %s: stderr lacks %q:\n%s", strings.Join(tt.args, " "), w, r.stderr)
			}
		}
		for _, never := range []string{"source code not available", "Variables not allowed", "hunter3"} {
			if strings.Contains(r.stderr, never) {
				t.Errorf("flow %s: stderr has %q:\n%s", strings.Join(tt.args, " "), never, r.stderr)
			}
		}
	}
}

// TestUsageNamesTheMistake: an extra argument is named, an unknown --log-level is a
// usage error, a misspelt task type gets a suggestion, and a command in a directory
// with no state names the directory flow looked in, not a file no run would create.
func TestUsageNamesTheMistake(t *testing.T) {
	h := newHarness(t)
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"run", "a", "b"}, `flow run takes PATH only; extra argument "b"`},
		{[]string{"run", "a", "b", "c"}, `extra arguments "b", "c"`},
		{[]string{"status", "x"}, `flow status takes no arguments; extra argument "x"`},
		{[]string{"run", flowPath("quick.hcl"), "--log-level", "verbose"}, `--log-level "verbose": want one of trace, debug, info, warn, error`},
		{[]string{"status", "--log-level", "loud"}, `--log-level "loud"`},
		{[]string{"tasks", "exce"}, `no task type "exce". Did you mean "exec"? Known types: exec,`},
	}
	for _, tt := range tests {
		r := h.expect(ExitInvalid, tt.args...)
		if !strings.Contains(r.stderr, tt.want) || r.stdout != "" {
			t.Errorf("flow %s: stdout %q, stderr %q; want %q", strings.Join(tt.args, " "), r.stdout, r.stderr, tt.want)
		}
	}
	if _, err := os.Stat(h.state); !os.IsNotExist(err) {
		t.Error("a usage error created the state file")
	}

	dir := t.TempDir()
	t.Chdir(dir)
	here := "no state file in " + filepath.Join(evalSymlinks(dir), ".flow")
	for _, args := range [][]string{{"status"}, {"resume"}, {"runs"}, {"output"}, {"logs", "exec.a"}, {"plan", "--destroy"},
		{"destroy", "--auto-approve"}, {"destroy"}} {
		var stdout, stderr strings.Builder
		err := New(testRegistry(t), &stdout, &stderr).Execute(args)
		msg := stdout.String() + stderr.String()
		if err != nil {
			msg += err.Error()
		}
		want, code := here+": nothing has run here yet", ExitInvalid
		if args[0] == "destroy" { // nothing to undo is no error
			want, code = "Nothing to destroy: there is "+here+".", ExitOK
		}
		if ExitCode(err) != code || strings.Contains(msg, "state.db") || !strings.Contains(msg, want) {
			t.Errorf("flow %s in an empty directory: exit %d, %q; want %d, %q", strings.Join(args, " "), ExitCode(err), msg, code, want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, ".flow")); !os.IsNotExist(err) {
		t.Error(".flow was created")
	}
}

// TestLogsOfTaskWithKeys: flow logs of a for_each task without a key lists its
// instances, and one of them as a command to copy.
func TestLogsOfTaskWithKeys(t *testing.T) {
	h := newHarness(t)
	h.expect(ExitOK, "run", flowPath("quick.hcl"))
	r := h.expect(ExitInvalid, "logs", "exec.launch")
	want := `exec.launch has one instance per key; name one: exec.launch["m1"], exec.launch["m2"] (e.g. flow logs 'exec.launch["m1"]'`
	if !strings.Contains(r.stderr, want) {
		t.Errorf("logs exec.launch: %q, want %q", r.stderr, want)
	}
	r = h.expect(ExitInvalid, "logs", "exec.nope")
	if !strings.Contains(r.stderr, "has no task instance exec.nope") {
		t.Errorf("logs exec.nope: %q", r.stderr)
	}
	h.expect(ExitOK, "logs", "exec.launch[m1]")
}

// TestFmtFormatsAroundABrokenFile: in a directory with one file that does not parse,
// fmt reports that file, leaves it as it is, and still formats and lists the others.
func TestFmtFormatsAroundABrokenFile(t *testing.T) {
	h := newHarness(t)
	broken := h.copyFlow("broken.hcl", "a_broken.hcl")
	first := h.copyFlow("unformatted.hcl", "b.hcl")
	second := h.copyFlow("unformatted.hcl", "c.hcl")
	before, _ := os.ReadFile(broken)
	orig, _ := os.ReadFile(first)

	r := h.expect(ExitInvalid, "fmt", "--check", h.tmp)
	if r.stdout == "" || !strings.Contains(r.stdout, "$TMP/b.hcl\n") || !strings.Contains(r.stdout, "$TMP/c.hcl\n") {
		t.Errorf("fmt --check does not list the files after the broken one:\n%s", r.stdout)
	}
	r = h.expect(ExitInvalid, "fmt", h.tmp)
	if r.stdout != "$TMP/b.hcl\n$TMP/c.hcl\n" || !strings.Contains(r.stderr, "a_broken.hcl does not parse") {
		t.Errorf("fmt: stdout %q, stderr %q", r.stdout, r.stderr)
	}
	for _, p := range []string{first, second} {
		if now, _ := os.ReadFile(p); bytes.Equal(now, orig) {
			t.Errorf("%s was not formatted", p)
		}
	}
	if after, _ := os.ReadFile(broken); !bytes.Equal(before, after) {
		t.Error("fmt rewrote the file that does not parse")
	}
	h.copyFlow("broken.hcl", "d_broken.hcl")
	r = h.expect(ExitInvalid, "fmt", h.tmp)
	if !strings.Contains(r.stderr, "2 files do not parse, and were left as they are: $TMP/a_broken.hcl, $TMP/d_broken.hcl") {
		t.Errorf("two broken files: %q", r.stderr)
	}
}

// TestTargetDoesNotBlockTheNextRun: a --target run's summary says what status says
// (pending), and a later plain run is not refused: it runs the whole flow, as
// Terraform's next apply does after a -target one. A --target run after it starts
// from its checkpoints.
func TestTargetDoesNotBlockTheNextRun(t *testing.T) {
	h := newHarness(t)
	flow := flowPath("quick.hcl")
	r := h.expect(ExitOK, "run", flow, "--target", "exec.prepare")
	if !strings.Contains(r.stdout, "Run 1 pending after <dur> (its --target instances ran): 1 succeeded.") {
		t.Errorf("targeted run's summary:\n%s", r.stdout)
	}
	if r = h.expect(ExitOK, "status"); !strings.HasPrefix(r.stdout, "Run 1: pending") {
		t.Errorf("status after a targeted run:\n%s", r.stdout)
	}
	r = h.expect(ExitOK, "run", flow, "--target", "exec.secret")
	if !strings.Contains(r.stdout, "From the checkpoints of run 1, starting run 2") {
		t.Errorf("a second targeted run does not start from the first's checkpoints:\n%s", r.stdout)
	}
	r = h.expect(ExitOK, "run", flow)
	if !strings.Contains(r.stdout, "Starting run 3") || !strings.Contains(r.stdout, "Run 3 succeeded") || !strings.Contains(r.stdout, "exec.join: succeeded") {
		t.Errorf("plain run after targeted ones:\n%s", r.stdout)
	}
	if r = h.expect(ExitOK, "status"); !strings.HasPrefix(r.stdout, "Run 3: succeeded") {
		t.Errorf("status after the plain run:\n%s", r.stdout)
	}
}

// TestWrapKeepsCommandsWhole: the live view's notice breaks between words, never
// inside a quoted command a reader copies, unless the command is longer than a line.
func TestWrapKeepsCommandsWhole(t *testing.T) {
	notice := `Interrupting: stopping running tasks (press Ctrl-C again to exit at once; "flow resume --state .flow/t.db" continues)`
	for width := 20; width <= 130; width++ {
		lines := wrap(notice, width)
		joined := strings.Join(lines, "\n")
		if strings.Join(strings.Fields(joined), " ") != notice {
			t.Fatalf("width %d: words lost or changed: %q", width, lines)
		}
		for _, l := range lines {
			if len([]rune(l)) >= width {
				t.Errorf("width %d: line %q is not narrower than the terminal", width, l)
			}
		}
		if width > len(`"flow resume --state .flow/t.db"`) && !strings.Contains(joined, `"flow resume --state .flow/t.db"`) {
			t.Errorf("width %d: the command is broken across lines: %q", width, lines)
		}
	}
	if got := wrap(`a "b c" d`, 5); strings.Join(got, "|") != `a "b|c" d` {
		t.Errorf("a command longer than a line is broken between its words: %q", got)
	}
}

// TestOutputRaw: --raw, terraform output's flag, prints one string, number or bool as
// it is, without a newline; a sensitive output is an error, never "(sensitive)".
func TestOutputRaw(t *testing.T) {
	h := newHarness(t)
	h.expect(ExitOK, "run", flowPath("quick.hcl"))
	for args, want := range map[string]string{"joined": "joined m1,m2", "members": "2"} {
		if r := h.expect(ExitOK, "output", "--raw", args); r.stdout != want {
			t.Errorf("output --raw %s: %q, want %q", args, r.stdout, want)
		}
	}
	for _, args := range [][]string{{"output", "--raw", "token"}, {"output", "--raw"}, {"output", "--raw", "--json", "joined"}} {
		if r := h.expect(ExitInvalid, args...); r.stdout != "" || r.stderr == "" {
			t.Errorf("flow %s: stdout %q, stderr %q", strings.Join(args, " "), r.stdout, r.stderr)
		}
	}
}
