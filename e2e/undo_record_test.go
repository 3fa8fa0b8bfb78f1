package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The tests of issue 27: every undo acts on what the state recorded of the instance,
// where it was made, never on the flow as it reads today. Exec flows in temporary
// directories; none needs LXD. Each checks the files on disk, not only messages.

// dirFlow makes the directory var.dir with a file in it; its undo removes the directory.
const dirFlow = `variable "dir" {
  type    = string
  default = "out1"
}

task "exec" "mk" {
  script = "mkdir -p ${var.dir} && touch ${var.dir}/data"
  undo   = "rm -rf ${var.dir}"
}
`

// keepDir writes keep/precious in dir: what no run made, and no undo may remove.
func keepDir(t *testing.T, dir string) string {
	t.Helper()
	writeFiles(t, dir, map[string]string{"v.hcl": dirFlow, "keep/precious": "mine"})
	return filepath.Join(dir, "keep", "precious")
}

// TestDestroyUndoesTheRecordedObject (item 1): destroy --var dir=keep removes out1,
// which the run made, and leaves keep/precious, which it did not; plan --destroy shows
// the recorded undo.
func TestDestroyUndoesTheRecordedObject(t *testing.T) {
	tag, dir := newTag(t), t.TempDir()
	precious := keepDir(t, dir)
	flowExit(t, tag, dir, 0, "run", "v.hcl")
	r := flowExit(t, tag, dir, 0, "plan", "--destroy", "--var", "dir=keep")
	if !strings.Contains(r.stdout, `"rm -rf out1"`) || strings.Contains(r.stdout, "rm -rf keep") {
		t.Errorf("plan --destroy does not show the recorded undo\n%s", r.desc)
	}
	r = flowExit(t, tag, dir, 0, "destroy", "--auto-approve", "--var", "dir=keep")
	if !exists(precious) {
		t.Errorf("destroy removed keep/precious, which no run made\n%s", r.desc)
	}
	if exists(filepath.Join(dir, "out1")) {
		t.Errorf("destroy left out1, which the run made\n%s", r.desc)
	}
	if !strings.Contains(r.stdout, "the flow now says otherwise") {
		t.Errorf("destroy does not say the flow differs from the record\n%s", r.desc)
	}
}

// TestReplaceUndoesTheRecordedObject (item 2): --replace with new inputs undoes what
// the instance made (out1), not what its new inputs name, then runs it with them.
func TestReplaceUndoesTheRecordedObject(t *testing.T) {
	tag, dir := newTag(t), t.TempDir()
	precious := keepDir(t, dir)
	flowExit(t, tag, dir, 0, "run", "v.hcl")
	r := flowExit(t, tag, dir, 0, "run", "v.hcl", "--replace", "exec.mk", "--var", "dir=keep")
	if exists(filepath.Join(dir, "out1")) {
		t.Errorf("--replace left out1, which the replaced instance made\n%s", r.desc)
	}
	if !exists(precious) || !exists(filepath.Join(dir, "keep", "data")) {
		t.Errorf("--replace did not keep keep/precious and make keep/data\n%s", r.desc)
	}
}

// filesFlow makes out/a and out/b; the undo removes them.
const filesFlow = `task "exec" "f" {
  for_each = toset(["a", "b"])
  script   = "mkdir -p out && touch out/${each.key}"
  undo     = "rm -f out/${each.key}"
}
`

// TestOneStatePerPlace (item 3): a run of P1's state from P2 is refused, naming both
// directories, and makes nothing in P2; destroy from P2 then removes P1's files. With
// --move the run is allowed and undoes here what it drops.
func TestOneStatePerPlace(t *testing.T) {
	tag, root := newTag(t), t.TempDir()
	p1, p2 := filepath.Join(root, "P1"), filepath.Join(root, "P2")
	writeFiles(t, root, map[string]string{"P1/files.hcl": filesFlow, "P2/.keep": ""})
	flowExit(t, tag, p1, 0, "run", "files.hcl")
	r := flowExit(t, tag, p2, 2, "run", "../P1/files.hcl", "--state", "../P1/.flow/files.db")
	if !strings.Contains(r.stderr, p1) || !strings.Contains(r.stderr, p2) || !strings.Contains(r.stderr, "--move") {
		t.Errorf("the refusal does not name both directories and --move\n%s", r.desc)
	}
	if exists(filepath.Join(p2, "out")) {
		t.Errorf("the refused run made P2/out")
	}
	flowExit(t, tag, p2, 0, "destroy", "--state", "../P1/.flow/files.db", "--auto-approve")
	for _, f := range []string{"a", "b"} {
		if exists(filepath.Join(p1, "out", f)) {
			t.Errorf("destroy from P2 left P1/out/%s", f)
		}
	}

	// The project moved: --move takes the instances along.
	flowExit(t, tag, p1, 0, "run", "files.hcl")
	if err := os.Rename(p1, filepath.Join(root, "P3")); err != nil {
		t.Fatal(err)
	}
	p3 := filepath.Join(root, "P3")
	flowExit(t, tag, p3, 2, "run", "files.hcl")
	flowExit(t, tag, p3, 0, "run", "files.hcl", "--move")
	flowExit(t, tag, p3, 0, "destroy", "--auto-approve")
	if entries, _ := os.ReadDir(filepath.Join(p3, "out")); len(entries) != 0 {
		t.Errorf("destroy after --move left %d files in P3/out", len(entries))
	}
}

// TestRemovedInstancesShown (item 4): after a shrink, status (and --json) shows the
// dropped instances as removed, the summary counts them, and a plan after the flow
// grows again says the run removed them.
func TestRemovedInstancesShown(t *testing.T) {
	tag, dir := newTag(t), t.TempDir()
	writeFiles(t, dir, map[string]string{"i.hcl": membersFlow})
	flowExit(t, tag, dir, 0, "run", "i.hcl")
	r := flowExit(t, tag, dir, 0, "run", "i.hcl", "--var", `members=["m1"]`)
	if !strings.Contains(r.stdout, "2 removed") {
		t.Errorf("the run's summary does not count the 2 removed instances\n%s", r.desc)
	}
	if exists(filepath.Join(dir, "m2.marker")) || exists(filepath.Join(dir, "m3.marker")) || !exists(filepath.Join(dir, "m1.marker")) {
		t.Errorf("the shrink did not undo exactly m2 and m3")
	}
	doc := status(t, tag, dir, ".flow/i.db")
	for addr, want := range map[string]string{`exec.member["m1"]`: "succeeded", `exec.member["m2"]`: "removed", `exec.member["m3"]`: "removed"} {
		if got := doc.byAddress()[addr].Status; got != want {
			t.Errorf("status --json: %s is %q, want %q", addr, got, want)
		}
	}
	r = flowExit(t, tag, dir, 0, "status", "--state", ".flow/i.db")
	if !strings.Contains(r.stdout, "1 succeeded") || !strings.Contains(r.stdout, "2 removed") {
		t.Errorf("status does not count removed instances\n%s", r.desc)
	}
	r = flowExit(t, tag, dir, 0, "plan", "i.hcl")
	if !strings.Contains(r.stdout, "removed it") || strings.Contains(r.stdout, `exec.member["m2"]  again: succeeded`) {
		t.Errorf("plan after the flow grew again does not say the run removed m2\n%s", r.desc)
	}
	r = flowExit(t, tag, dir, 0, "destroy", "--auto-approve")
	if !strings.Contains(r.stdout, "1 destroyed") {
		t.Errorf("destroy summary\n%s", r.desc)
	}
}

// TestSecondInterruptStopsTasks (item 5): a second Ctrl-C exits at once and stops the
// task's processes, a shell that ignores SIGTERM and its sleep among them.
func TestSecondInterruptStopsTasks(t *testing.T) {
	tag, dir := newTag(t), t.TempDir()
	writeFiles(t, dir, map[string]string{"t.hcl": `task "exec" "stubborn" {
  script = "trap '' TERM; sleep 30; echo done"
}
`})
	p := start(t, tag, dir, "run", "t.hcl", "--progress", "plain")
	waitForProcesses(t, tag, 3, p) // flow, sh, sleep
	p.signal(t, syscall.SIGINT)
	time.Sleep(300 * time.Millisecond)
	p.signal(t, syscall.SIGINT)
	if !p.wait(8 * time.Second) {
		t.Fatalf("flow did not exit after the second Ctrl-C\n%s", p.describe())
	}
	if p.code() != 130 {
		t.Errorf("exit %d, want 130\n%s", p.code(), p.describe())
	}
	deadline := time.Now().Add(3 * time.Second)
	for len(tagged(tag)) > 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if left := tagged(tag); len(left) > 0 {
		t.Errorf("processes left running after the second Ctrl-C: %v\n%s", left, p.describe())
	}
}

// TestResumeStopsSurvivor (item 5): a run SIGKILLed while its task runs leaves the
// task's sleep behind; the resume stops it before it runs the instance again, so no
// second copy runs beside it.
func TestResumeStopsSurvivor(t *testing.T) {
	tag, dir := leaveSurvivor(t, "sleep 30")
	r := flowExit(t, tag, dir, 0, "resume")
	if !strings.Contains(r.stdout, "still runs; stopping it first") {
		t.Errorf("the resume did not stop the survivor\n%s", r.desc)
	}
	if left := tagged(tag); len(left) > 0 {
		t.Errorf("processes left running after the resume: %v", left)
	}
}

// waitForProcesses waits until n processes carry tag: the flow and its task's.
func waitForProcesses(t *testing.T, tag string, n int, p *proc) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for len(tagged(tag)) < n {
		if time.Now().After(deadline) || p.exited() {
			t.Fatalf("the task's processes did not start\n%s", p.describe())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestFailedDestroyDoesNotLockOut (item 6): after a destroy that failed, run --new
// works with a warning, and destroy again continues it.
func TestFailedDestroyDoesNotLockOut(t *testing.T) {
	tag, dir := newTag(t), t.TempDir()
	writeFiles(t, dir, map[string]string{"u.hcl": `task "exec" "a" {
  script = "touch a.marker"
  undo   = "test ! -f broken && rm -f a.marker"
}
`})
	flowExit(t, tag, dir, 0, "run", "u.hcl")
	writeFiles(t, dir, map[string]string{"broken": ""})
	flowExit(t, tag, dir, 1, "destroy", "--auto-approve")
	r := flowExit(t, tag, dir, 0, "plan", "u.hcl")
	if !strings.Contains(r.stdout, "did not finish") || !strings.Contains(r.stdout, "a run refuses until then") {
		t.Errorf("the plan does not say that a run refuses after the unfinished destroy\n%s", r.desc)
	}
	r = flowExit(t, tag, dir, 2, "run", "u.hcl")
	if !strings.Contains(r.stderr, "flow run --new") {
		t.Errorf("the refusal does not offer run --new\n%s", r.desc)
	}
	r = flowExit(t, tag, dir, 0, "run", "u.hcl", "--new")
	if !strings.Contains(r.stdout, "did not finish") {
		t.Errorf("run --new does not warn of the unfinished destroy\n%s", r.desc)
	}
	if err := os.Remove(filepath.Join(dir, "broken")); err != nil {
		t.Fatal(err)
	}
	flowExit(t, tag, dir, 0, "destroy", "--auto-approve")
	if exists(filepath.Join(dir, "a.marker")) {
		t.Error("destroy left a.marker")
	}
	r = flowExit(t, tag, dir, 0, "destroy")
	if !strings.Contains(r.stdout, "Nothing to destroy") {
		t.Errorf("destroy of nothing without a terminal\n%s", r.desc)
	}
}

// TestResumeNamesDrift (issue 27, doctor): a resume of a run that succeeded has nothing
// to do, but says which instance's object changed since (a process killed behind
// flow's back) and the command that makes it again; that command does.
func TestResumeNamesDrift(t *testing.T) {
	tag, dir := newTag(t), t.TempDir()
	writeFiles(t, dir, map[string]string{"p.hcl": `task "process" "sleeper" {
  command  = ["sleep", "300"]
  pid_file = "run/sleeper.pid"
  log_file = "run/sleeper.log"
}
`})
	flowExit(t, tag, dir, 0, "run", "p.hcl")
	t.Cleanup(func() { flowExit(t, tag, dir, 0, "destroy", "--auto-approve") })
	pid := pidOf(t, filepath.Join(dir, "run", "sleeper.pid"))
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); processAlive(pid); {
		if time.Now().After(deadline) {
			t.Fatalf("pid %d outlived its SIGKILL", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
	r := flowExit(t, tag, dir, 0, "resume")
	if !strings.Contains(r.stdout, "process.sleeper: drifted since it succeeded") || !strings.Contains(r.stdout, `"flow run p.hcl"`) {
		t.Fatalf("resume does not name the drift and its repair\n%s", r.desc)
	}
	flowExit(t, tag, dir, 0, "run", "p.hcl")
	if r := flowExit(t, tag, dir, 0, "resume"); strings.Contains(r.stdout, "drifted") {
		t.Errorf("the repair did not repair\n%s", r.desc)
	}
}

// pidOf reads the pid a process task's pid file records on its first line.
func pidOf(t *testing.T, path string) int {
	t.Helper()
	first, _, _ := strings.Cut(readFile(t, path), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(first))
	if err != nil || pid <= 0 {
		t.Fatalf("pid file %s: %q: %v", path, first, err)
	}
	return pid
}

// processAlive reports whether pid runs (a zombie does not).
func processAlive(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(stat), ')')
	return i > 0 && i+2 < len(stat) && stat[i+2] != 'Z' && stat[i+2] != 'X'
}

// leaveSurvivor runs a flow whose one task runs script (once: its second run exits at
// once) and SIGKILLs flow while it runs, leaving the script's processes behind.
func leaveSurvivor(t *testing.T, script string) (tag, dir string) {
	t.Helper()
	tag, dir = newTag(t), t.TempDir()
	writeFiles(t, dir, map[string]string{"t.hcl": fmt.Sprintf(`task "exec" "slow" {
  script = "if [ -f second ]; then exit 0; fi; touch second; %s"
}
`, script)})
	p := start(t, tag, dir, "run", "t.hcl", "--progress", "plain")
	waitForProcesses(t, tag, 3, p)
	time.Sleep(time.Second) // the process group rides with a lazy commit
	p.signal(t, syscall.SIGKILL)
	p.wait(5 * time.Second)
	if len(tagged(tag)) == 0 {
		t.Fatal("the killed run left no survivor; the test cannot show anything")
	}
	return tag, dir
}
