package cli

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// TestDestroy: flow destroy --auto-approve stops the process a run started, with the variables the
// run recorded and no flags, runs an exec task's undo script after that, leaves an
// exec task without one as it is and says so, is checkpointed, and says so when there
// is nothing left to destroy.
func TestDestroy(t *testing.T) {
	h := newHarness(t)
	dir := filepath.Join(h.tmp, "lab")
	h.expect(ExitOK, "run", flowPath("destroy.hcl"), "--var", "dir="+dir, "--parallelism", "1")
	r := h.expect(ExitOK, "output", "pid")
	pid, err := strconv.Atoi(strings.TrimSpace(r.stdout))
	if err != nil || !alive(pid) {
		t.Fatalf("the run's process is not running: %q %v", r.stdout, err)
	}
	t.Cleanup(func() { syscall.Kill(-pid, syscall.SIGKILL) })

	r = h.expect(ExitOK, "destroy", "--auto-approve")
	for _, want := range []string{
		"Destroying what run 1 of testdata/flows/destroy.hcl created (destroy run 2)",
		`exec.report: left as it is (it sets no undo; see "flow tasks exec")`,
		"process.sleeper: destroyed in",
		"[exec.prepare] removed run",
		"Destroy run 2 succeeded in <dur>: 2 destroyed, 1 left as it is.",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("destroy lacks %q:\n%s", want, r.stdout)
		}
	}
	if alive(pid) {
		t.Errorf("process %d still runs after destroy", pid)
	}
	if _, err := os.Stat(filepath.Join(dir, "run")); !os.IsNotExist(err) {
		t.Errorf("run directory after destroy (exec.prepare's undo removes it): %v", err)
	}
	r = h.expect(ExitOK, "destroy", "--auto-approve")
	if r.stdout != "Nothing to destroy: run 1 was destroyed by run 2.\n" {
		t.Errorf("second destroy: %q", r.stdout)
	}
	h.expect(ExitOK, "status")
	h.expect(ExitOK, "runs")
	h.expect(ExitOK, "resume")
	h.expect(ExitOK, "tasks", "process")
	golden(t, "destroy.txt", strings.ReplaceAll(h.log.String(), strconv.Itoa(pid), "<pid>"))
}

func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	// A zombie has exited; its parent (this test) has not reaped it.
	return err == nil && !strings.Contains(string(stat), ") Z ")
}

// TestDestroyAsks: plan --destroy shows what destroy would do; destroy without a
// terminal and without --auto-approve refuses and undoes nothing; on a terminal it
// shows the same and goes on only on "yes".
func TestDestroyAsks(t *testing.T) {
	h := newHarness(t)
	dir := filepath.Join(h.tmp, "lab")
	h.expect(ExitOK, "run", flowPath("destroy.hcl"), "--var", "dir="+dir, "--parallelism", "1")
	r := h.expect(ExitOK, "output", "pid")
	pid, _ := strconv.Atoi(strings.TrimSpace(r.stdout))
	t.Cleanup(func() { syscall.Kill(-pid, syscall.SIGKILL) })

	tests := []struct {
		name     string
		input    string
		terminal bool
		args     []string
		code     int
		want     string
	}{
		{"plan", "", false, []string{"plan", "--destroy"}, ExitOK, "3 instances: 2 to destroy, 1 to keep."},
		{"plan of the flow", "", false, []string{"plan", "--destroy", flowPath("destroy.hcl")}, ExitOK, "destroy  exec.prepare"},
		{"plan of another flow", "", false, []string{"plan", "--destroy", flowPath("fail.hcl")}, ExitInvalid, ""},
		{"no terminal", "yes\n", false, []string{"destroy"}, ExitInvalid, ""},
		{"declined", "no\n", true, []string{"destroy"}, ExitTaskFailed, `Do you want to destroy 2 instances? Only "yes" goes on.`},
		// Only "yes" goes on, as Terraform's: not an answer that starts with y, nor another case.
		{"declined y", "y\n", true, []string{"destroy"}, ExitTaskFailed, `Only "yes" goes on.`},
		{"declined Y", "Y\n", true, []string{"destroy"}, ExitTaskFailed, `Only "yes" goes on.`},
		{"declined ye", "ye\n", true, []string{"destroy"}, ExitTaskFailed, `Only "yes" goes on.`},
		{"declined Yes", "Yes\n", true, []string{"destroy"}, ExitTaskFailed, `Only "yes" goes on.`},
		{"declined yess", "yess\n", true, []string{"destroy"}, ExitTaskFailed, `Only "yes" goes on.`},
		{"no answer", "", true, []string{"destroy"}, ExitTaskFailed, "Destroying what run 1 of testdata/flows/destroy.hcl created"},
	}
	for _, tt := range tests {
		h.input, h.terminal = tt.input, tt.terminal
		r := h.expect(tt.code, tt.args...)
		if !strings.Contains(r.stdout, tt.want) {
			t.Errorf("%s: stdout lacks %q:\n%s", tt.name, tt.want, r.stdout)
		}
		if !alive(pid) || strings.Contains(r.stdout, "destroyed in") {
			t.Fatalf("%s destroyed something:\n%s", tt.name, r.stdout)
		}
	}
	h.input, h.terminal = "yes\n", true
	r = h.expect(ExitOK, "destroy")
	if !strings.Contains(r.stdout, "Destroy run 2 succeeded") || alive(pid) {
		t.Errorf("destroy answered yes:\n%s", r.stdout)
	}
	golden(t, "destroy-asks.txt", strings.ReplaceAll(h.log.String(), strconv.Itoa(pid), "<pid>"))
}
