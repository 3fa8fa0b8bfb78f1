package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTargetReplace: --target runs an instance and what it depends on, --replace runs
// an instance again though it succeeded, and plan shows both before they run.
func TestTargetReplace(t *testing.T) {
	h := newHarness(t)
	quick := flowPath("quick.hcl")
	h.expect(ExitOK, "plan", quick, "--target", "exec.configure[m1]")
	r := h.expect(ExitOK, "run", quick, "--target", "exec.configure[m1]", "--parallelism", "1")
	for _, want := range []string{"3 task instances", `exec.launch["m1"]: succeeded`, `exec.configure["m1"]: succeeded`} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("targeted run lacks %q:\n%s", want, r.stdout)
		}
	}
	if strings.Contains(r.stdout, `exec.launch["m2"]`) {
		t.Errorf("targeted run ran m2:\n%s", r.stdout)
	}
	// Not every instance ran: the run is unfinished, and resume does the rest.
	r = h.expect(ExitOK, "status", "--json")
	if !strings.Contains(r.stdout, `"status": "pending",`) {
		t.Errorf("status after a targeted run:\n%s", r.stdout)
	}
	r = h.expect(ExitOK, "resume", "--parallelism", "1")
	if !strings.Contains(r.stdout, `exec.launch["m1"]: up to date`) || !strings.Contains(r.stdout, `exec.launch["m2"]: succeeded`) {
		t.Errorf("resume after a targeted run:\n%s", r.stdout)
	}
	// --replace: the task's instances run again, the rest stays up to date.
	h.expect(ExitOK, "plan", quick, "--replace", "exec.launch")
	r = h.expect(ExitOK, "run", quick, "--replace", "exec.launch", "--target", "exec.configure", "--parallelism", "1")
	for _, want := range []string{`exec.launch["m1"]: replaced (--replace); running it`, `exec.prepare: up to date`, "Run 2 succeeded"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("replace run lacks %q:\n%s", want, r.stdout)
		}
	}
	h.expect(ExitOK, "status")
	h.expect(ExitInvalid, "run", quick, "--target", "exec.nope")
	h.expect(ExitInvalid, "plan", quick, "--replace", "exec.launch[m9]")
	golden(t, "target.txt", h.log.String())
}

// TestOutput: flow output reads the latest run's outputs from the state; status --json
// carries them; validate --json reports diagnostics as data.
func TestOutput(t *testing.T) {
	h := newHarness(t)
	h.expect(ExitInvalid, "output")
	h.expect(ExitOK, "run", flowPath("quick.hcl"), "--parallelism", "1")
	r := h.expect(ExitOK, "output", "joined")
	if r.stdout != "joined m1,m2\n" {
		t.Errorf("output joined: %q", r.stdout)
	}
	h.expect(ExitOK, "output")
	r = h.expect(ExitOK, "output", "--json")
	var outs map[string]outputDoc
	if err := json.Unmarshal([]byte(r.stdout), &outs); err != nil || string(outs["members"].Value) != "2" {
		t.Errorf("output --json: %v %s", err, r.stdout)
	}
	h.expect(ExitOK, "output", "members", "--json")
	h.expect(ExitInvalid, "output", "nope")
	// A script reading one value never gets "(sensitive)" in its place.
	h.expect(ExitOK, "output", "joined", "--show-sensitive")
	for _, args := range [][]string{{"output", "token"}, {"output", "token", "--show-sensitive"}, {"output", "--show-sensitive"}} {
		r = h.expect(ExitInvalid, args...)
		if r.stdout != "" {
			t.Errorf("%v: stdout %q", args, r.stdout)
		}
		if !strings.Contains(r.stderr, `output "token" is sensitive, and flow never writes a secret to the state file`) {
			t.Errorf("%v: %q", args, r.stderr)
		}
	}
	r = h.expect(ExitOK, "status", "--json")
	if !strings.Contains(r.stdout, `"outputs": {`) || !strings.Contains(r.stdout, `"joined": {`) {
		t.Errorf("status --json lacks the outputs:\n%s", r.stdout)
	}
	h.expect(ExitOK, "validate", "--json", flowPath("quick.hcl"))
	r = h.expect(ExitInvalid, "validate", "--json", flowPath("invalid.hcl"))
	var v validateDoc
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil || v.Valid || v.ErrorCount != 3 || v.Diagnostics[0].Range.Start.Line != 6 {
		t.Errorf("validate --json: %v %+v", err, v)
	}
	golden(t, "output.txt", h.log.String())
}

func TestNormalizeAddress(t *testing.T) {
	for in, want := range map[string]string{
		`exec.build`:                    `exec.build`,
		`exec.build[m1]`:                `exec.build["m1"]`,
		`exec.build["m1"]`:              `exec.build["m1"]`,
		`module.member[m1].exec.x[a]`:   `module.member["m1"].exec.x["a"]`,
		`module.member["m1"].exec.x[a]`: `module.member["m1"].exec.x["a"]`,
	} {
		if got := normalizeAddress(in); got != want {
			t.Errorf("normalizeAddress(%s) = %s, want %s", in, got, want)
		}
	}
}

// TestResumeHint: a failed run's summary repeats --state and the variable flags a
// resume needs, never a sensitive value.
func TestResumeHint(t *testing.T) {
	h := newHarness(t)
	varFile := filepath.Join(h.tmp, "lab.vars.hcl")
	if err := os.WriteFile(varFile, []byte("region = \"eu\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := h.expect(ExitTaskFailed, "run", flowPath("secret_fail.hcl"), "--var", "token=hunter2", "--var-file", varFile)
	want := `Continue with "flow resume --state $TMP/state.db --var-file $TMP/lab.vars.hcl --var token=..."`
	if !strings.Contains(r.stdout, want) || strings.Contains(r.stdout, "hunter2") {
		t.Errorf("summary lacks %q or shows the secret:\n%s", want, r.stdout)
	}
}
