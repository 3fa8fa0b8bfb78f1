package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// inDir runs flow with exactly args in the current directory, as a user types it:
// no --state is added. stdin is no terminal.
func inDir(t *testing.T, args ...string) result {
	t.Helper()
	var stdout, stderr bytes.Buffer
	c := New(testRegistry(t), &stdout, &stderr)
	c.stdin, c.stdinTerminal = strings.NewReader(""), false
	err := c.Execute(args)
	if err != nil && !Reported(err) {
		stderr.WriteString("flow: " + err.Error() + "\n")
	}
	return result{stdout: stdout.String(), stderr: stderr.String(), code: ExitCode(err), err: err}
}

var hintRE = regexp.MustCompile(`"flow (?:[^"\\]|\\.)*"`)

// hints are the command lines quoted in out, in order.
func hints(t *testing.T, out string) []string {
	t.Helper()
	var found []string
	for _, q := range hintRE.FindAllString(out, -1) {
		h, err := strconv.Unquote(q)
		if err != nil {
			t.Fatalf("hint %s: %v", q, err)
		}
		found = append(found, h)
	}
	return found
}

// shellWords splits a command line as a POSIX shell does for what shellQuote makes:
// words separated by spaces, single quotes around a word that needs them.
func shellWords(t *testing.T, line string) []string {
	t.Helper()
	var words []string
	var cur strings.Builder
	inWord, quoted := false, false
	for _, r := range line {
		switch {
		case r == '\'':
			quoted, inWord = !quoted, true
		case r == ' ' && !quoted:
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
			}
			inWord = false
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if quoted {
		t.Fatalf("unbalanced quotes in %q", line)
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words
}

// runHint runs a suggested command line as copied, with ADDRESS filled in.
func runHint(t *testing.T, hint, address string) result {
	t.Helper()
	words := shellWords(t, hint)
	if words[0] != "flow" {
		t.Fatalf("hint %q does not start with flow", hint)
	}
	for i, w := range words {
		if w == "ADDRESS" {
			words[i] = address
		}
	}
	return inDir(t, words[1:]...)
}

func writeFlow(t *testing.T, dir, name, from string) {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("testdata", "flows", from))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), src, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestHintsActOnTheSameState: every command a message suggests carries what makes
// copying it act on the same state file: --state when it was given or when the
// command would not find that file by itself, the flow path the user gave, and --flow
// when given. Each hint is run as copied and must act on that state.
func TestHintsActOnTheSameState(t *testing.T) {
	dir := t.TempDir()
	writeFlow(t, dir, "fail.hcl", "fail.hcl")
	writeFlow(t, dir, "one.hcl", "one.hcl")
	t.Chdir(dir)
	// Two state files in .flow: a command without --state would not know which.
	if r := inDir(t, "run", "one.hcl"); r.code != ExitOK {
		t.Fatalf("run one.hcl: %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	t.Run("failed run, state named after the flow", func(t *testing.T) {
		r := inDir(t, "run", "fail.hcl")
		got := hints(t, r.stdout)
		want := []string{"flow resume --state .flow/fail.db", "flow status --state .flow/fail.db", "flow logs ADDRESS --state .flow/fail.db"}
		if strings.Join(got, "|") != strings.Join(want, "|") {
			t.Fatalf("hints %q, want %q\n%s", got, want, r.stdout)
		}
		if r := runHint(t, got[1], ""); r.code != ExitOK || !strings.HasPrefix(r.stdout, "Run 1: failed (") {
			t.Errorf("%s: exit %d\n%s%s", got[1], r.code, r.stdout, r.stderr)
		}
		if r := runHint(t, got[2], "exec.build"); r.code != ExitOK || !strings.Contains(r.stdout, "missing semicolon") {
			t.Errorf("%s: exit %d\n%s%s", got[2], r.code, r.stdout, r.stderr)
		}
		if r := runHint(t, got[0], ""); r.code != ExitTaskFailed || !strings.HasPrefix(r.stdout, "Resuming run 1 of ") {
			t.Errorf("%s: exit %d\n%s%s", got[0], r.code, r.stdout, r.stderr)
		}
	})

	t.Run("unfinished run refuses a new one", func(t *testing.T) {
		r := inDir(t, "run", "fail.hcl")
		got := hints(t, r.stderr)
		// run --new names the same flow, whose default state file is this one.
		want := []string{"flow resume --state .flow/fail.db", "flow run --new fail.hcl"}
		if r.code != ExitInvalid || strings.Join(got, "|") != strings.Join(want, "|") {
			t.Fatalf("exit %d, hints %q, want %q\n%s", r.code, got, want, r.stderr)
		}
		if r := runHint(t, got[1], ""); r.code != ExitTaskFailed || !strings.HasPrefix(r.stdout, "Starting run 2 of ") {
			t.Errorf("%s: exit %d\n%s%s", got[1], r.code, r.stdout, r.stderr)
		}
	})

	t.Run("--state given, quoted", func(t *testing.T) {
		r := inDir(t, "run", "fail.hcl", "--state", "my state.db")
		got := hints(t, r.stdout)
		if len(got) != 3 || got[0] != "flow resume --state 'my state.db'" {
			t.Fatalf("hints %q\n%s", got, r.stdout)
		}
		if r := runHint(t, got[1], ""); r.code != ExitOK || !strings.HasPrefix(r.stdout, "Run 1: failed (") {
			t.Errorf("%s: exit %d\n%s%s", got[1], r.code, r.stdout, r.stderr)
		}
		r = inDir(t, "run", "fail.hcl", "--state", "my state.db")
		got = hints(t, r.stderr)
		want := []string{"flow resume --state 'my state.db'", "flow run --new fail.hcl --state 'my state.db'"}
		if strings.Join(got, "|") != strings.Join(want, "|") {
			t.Fatalf("hints %q, want %q\n%s", got, want, r.stderr)
		}
		if r := runHint(t, got[1], ""); r.code != ExitTaskFailed || !strings.HasPrefix(r.stdout, "Starting run 2 of ") {
			t.Errorf("%s: exit %d\n%s%s", got[1], r.code, r.stdout, r.stderr)
		}
	})

	t.Run("succeeded run: nothing to resume", func(t *testing.T) {
		r := inDir(t, "resume", "--state", ".flow/one.db")
		got := hints(t, r.stdout)
		if len(got) != 1 || !strings.HasSuffix(got[0], "one.hcl --state .flow/one.db") {
			t.Fatalf("hints %q\n%s", got, r.stdout)
		}
		if r := runHint(t, got[0], ""); r.code != ExitOK || !strings.HasPrefix(r.stdout, "Starting run 2 of ") {
			t.Errorf("%s: exit %d\n%s%s", got[0], r.code, r.stdout, r.stderr)
		}
	})

	t.Run("--flow given to destroy", func(t *testing.T) {
		// Nothing to undo: no terminal is needed to say so, and that is no failure.
		r := inDir(t, "destroy", "--state", ".flow/one.db", "--flow", "one.hcl")
		got := hints(t, r.stdout)
		if r.code != ExitOK || len(got) != 1 || got[0] != "flow plan --destroy --state .flow/one.db --flow one.hcl" {
			t.Fatalf("exit %d, hints %q\n%s%s", r.code, got, r.stdout, r.stderr)
		}
		if r := runHint(t, got[0], ""); r.code != ExitOK || !strings.Contains(r.stdout, "1 instance: 0 to destroy, 1 to keep.") {
			t.Errorf("%s: exit %d\n%s%s", got[0], r.code, r.stdout, r.stderr)
		}
		// --flow is plan --destroy's only: a plan of a flow names it as PATH.
		if r := inDir(t, "plan", "one.hcl", "--flow", "one.hcl"); r.code != ExitInvalid || !strings.Contains(r.stderr, "--flow is for plan --destroy") {
			t.Errorf("plan PATH --flow: exit %d\n%s", r.code, r.stderr)
		}
	})

	t.Run("$FLOW_STATE: found by itself", func(t *testing.T) {
		t.Setenv("FLOW_STATE", "env.db")
		r := inDir(t, "run", "fail.hcl")
		got := hints(t, r.stdout)
		want := []string{"flow resume", "flow status", "flow logs ADDRESS"}
		if strings.Join(got, "|") != strings.Join(want, "|") {
			t.Fatalf("hints %q, want %q\n%s", got, want, r.stdout)
		}
		if r := runHint(t, got[1], ""); r.code != ExitOK || !strings.HasPrefix(r.stdout, "Run 1: failed (") {
			t.Errorf("%s: exit %d\n%s%s", got[1], r.code, r.stdout, r.stderr)
		}
	})
}
