package cli

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// TestDestroy: flow destroy stops the process a run started, with the variables the
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

	r = h.expect(ExitOK, "destroy")
	for _, want := range []string{
		"Destroying what run 1 of testdata/flows/destroy.hcl created (destroy run 2)",
		`exec.report: left as it is (it sets no undo; see "flow tasks exec")`,
		"process.sleeper: destroyed in",
		"[exec.prepare] removed run",
		"Destroy run 2 succeeded in <dur>: 2 destroyed, 1 left as they are.",
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
	r = h.expect(ExitOK, "destroy")
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
