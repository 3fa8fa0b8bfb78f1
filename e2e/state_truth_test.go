package e2e

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
)

// The tests of issue 20: the state is the truth. Every flow here is exec tasks in a
// temporary directory; none needs LXD.

// markerFlow creates NAME.marker in the directory it runs in, and its undo removes it.
const markerFlow = `task "exec" "a" {
  script = "touch a.marker"
  undo   = "rm -f a.marker"
}
`

// gatedFlow fails until a file "go" exists where it runs, then creates b.marker.
const gatedFlow = `task "exec" "gate" {
  script = "test -f go"
}

task "exec" "b" {
  depends_on = [exec.gate]
  script     = "touch b.marker"
}
`

// writeFiles writes each name (relative to root) with its content, creating directories.
func writeFiles(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		path := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// flowExit runs flow in dir and fails the test unless it exits with want.
func flowExit(t *testing.T, tag, dir string, want int, args ...string) result {
	t.Helper()
	r := runFlow(t, tag, dir, time.Minute, args...)
	if r.code != want {
		t.Fatalf("exit %d, want %d\n%s", r.code, want, r.desc)
	}
	return r
}

// TestDestroyActsInRunDirectory (issue 20, defect 1): a destroy called from another
// directory runs the undo where the run ran: it removes the run's file and leaves an
// unrelated file of the same name in the caller's directory alone.
func TestDestroyActsInRunDirectory(t *testing.T) {
	tag, root := newTag(t), t.TempDir()
	two, elsewhere := filepath.Join(root, "two"), filepath.Join(root, "elsewhere")
	writeFiles(t, root, map[string]string{"two/main.hcl": markerFlow, "elsewhere/a.marker": "unrelated"})
	flowExit(t, tag, two, 0, "run", "main.hcl", "--state", "s.db")
	if !exists(filepath.Join(two, "a.marker")) {
		t.Fatal("the run did not create two/a.marker")
	}
	r := flowExit(t, tag, elsewhere, 0, "destroy", "--state", "../two/s.db", "--auto-approve")
	if exists(filepath.Join(two, "a.marker")) {
		t.Errorf("two/a.marker survived the destroy\n%s", r.desc)
	}
	if readFile(t, filepath.Join(elsewhere, "a.marker")) != "unrelated" {
		t.Errorf("the destroy removed elsewhere/a.marker, a file the run never made\n%s", r.desc)
	}
	if entries, _ := os.ReadDir(elsewhere); len(entries) != 1 {
		t.Errorf("the destroy left files in the caller's directory: %v", entries)
	}
}

// TestResumeActsInRunDirectory (issue 20, defect 1): a resume called from another
// directory runs the rest of the run where it ran.
func TestResumeActsInRunDirectory(t *testing.T) {
	tag, root := newTag(t), t.TempDir()
	two, elsewhere := filepath.Join(root, "two"), filepath.Join(root, "elsewhere")
	writeFiles(t, root, map[string]string{"two/main.hcl": gatedFlow, "elsewhere/keep": ""})
	flowExit(t, tag, two, 1, "run", "main.hcl", "--state", "s.db")
	writeFiles(t, two, map[string]string{"go": ""})
	r := flowExit(t, tag, elsewhere, 0, "resume", "--state", "../two/s.db")
	if !exists(filepath.Join(two, "b.marker")) || exists(filepath.Join(elsewhere, "b.marker")) {
		t.Errorf("the resume did not run exec.b in the run's directory\n%s", r.desc)
	}
}

// TestMovedFlow (issue 20, defect 4): a state whose flow and directory moved says so
// and how to go on, and --flow resumes it in the new place.
func TestMovedFlow(t *testing.T) {
	tag, root := newTag(t), t.TempDir()
	writeFiles(t, root, map[string]string{"two/main.hcl": gatedFlow})
	flowExit(t, tag, filepath.Join(root, "two"), 1, "run", "main.hcl", "--state", "s.db")
	moved := filepath.Join(root, "moved")
	if err := os.Rename(filepath.Join(root, "two"), moved); err != nil {
		t.Fatal(err)
	}
	writeFiles(t, moved, map[string]string{"go": ""})
	r := flowExit(t, tag, root, 2, "resume", "--state", "moved/s.db")
	if !strings.Contains(r.stderr, "--flow PATH") {
		t.Errorf("the refusal does not say how to point at the moved flow\n%s", r.desc)
	}
	r = flowExit(t, tag, root, 0, "resume", "--state", "moved/s.db", "--flow", "moved/main.hcl")
	if !exists(filepath.Join(moved, "b.marker")) || exists(filepath.Join(root, "b.marker")) {
		t.Errorf("the resume did not run in the moved directory\n%s", r.desc)
	}
}

// TestNoStateCreatesNothing (issue 20, audit): resume of a state file that does not
// exist refuses, destroy says there is nothing to destroy, and neither creates a file
// or a directory, nor do the commands that only read one.
func TestNoStateCreatesNothing(t *testing.T) {
	tag, dir := newTag(t), t.TempDir()
	for _, args := range [][]string{
		{"destroy", "--auto-approve"}, {"resume"},
		{"destroy", "--auto-approve", "--state", "sub/s.db"}, {"resume", "--state", "sub/s.db"},
		{"status"}, {"output"}, {"runs"}, {"logs", "exec.a"}, {"plan", "--destroy"},
		{"status", "--state", "sub/s.db"}, {"output", "--state", "sub/s.db"}, {"runs", "--state", "sub/s.db"},
	} {
		want, out := 2, func(r result) string { return r.stderr }
		if args[0] == "destroy" { // nothing to destroy: said, and no failure (issue 27)
			want, out = 0, func(r result) string { return r.stdout }
		}
		r := flowExit(t, tag, dir, want, args...)
		if !strings.Contains(out(r), "no state file") {
			t.Errorf("flow %v does not say there is no state file\n%s", args, r.desc)
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 0 {
			t.Fatalf("flow %v created %v", args, entries)
		}
	}
}

// TestDestroyRefusesWithoutTerminal (issue 20, defect 3): without a terminal to ask on
// and without --auto-approve, destroy refuses and changes nothing; plan --destroy
// shows what it would do.
func TestDestroyRefusesWithoutTerminal(t *testing.T) {
	tag, dir := newTag(t), t.TempDir()
	writeFiles(t, dir, map[string]string{"main.hcl": markerFlow})
	flowExit(t, tag, dir, 0, "run", "main.hcl", "--state", "s.db")
	r := flowExit(t, tag, dir, 0, "plan", "--destroy", "--state", "s.db")
	if !strings.Contains(r.stdout, "destroy  exec.a  runs its undo") {
		t.Errorf("plan --destroy does not show exec.a's undo\n%s", r.desc)
	}
	r = flowExit(t, tag, dir, 2, "destroy", "--state", "s.db")
	if !strings.Contains(r.stderr, "--auto-approve") || !exists(filepath.Join(dir, "a.marker")) {
		t.Errorf("destroy without a terminal did not refuse, or removed a.marker\n%s", r.desc)
	}
}

// TestDestroyAsksOnTerminal (issue 20, defect 3): in a pseudo-terminal, destroy shows
// what it will undo and waits for "yes" before it undoes anything.
func TestDestroyAsksOnTerminal(t *testing.T) {
	tag, dir := newTag(t), t.TempDir()
	writeFiles(t, dir, map[string]string{"main.hcl": markerFlow})
	flowExit(t, tag, dir, 0, "run", "main.hcl", "--state", "s.db")
	cmd := exec.Command(binary(t), "destroy", "--state", "s.db", "--progress", "plain")
	cmd.Dir, cmd.Env = dir, flowEnv(tag)
	tty, err := pty.Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	defer tty.Close()
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	seen := make(chan string, 1)
	var out strings.Builder
	go func() {
		r := bufio.NewReader(tty)
		buf := make([]byte, 256)
		for {
			n, err := r.Read(buf)
			out.Write(buf[:n])
			if strings.Contains(out.String(), "Enter a value:") {
				seen <- out.String()
				_, _ = io.Copy(io.Discard, r)
				return
			}
			if err != nil {
				seen <- out.String()
				return
			}
		}
	}()
	var asked string
	select {
	case asked = <-seen:
	case <-time.After(30 * time.Second):
		t.Fatal("destroy did not ask within 30s")
	}
	if !strings.Contains(asked, "destroy  exec.a") || !strings.Contains(asked, "Enter a value:") {
		t.Fatalf("destroy did not show what it would undo and ask:\n%s", asked)
	}
	time.Sleep(200 * time.Millisecond)
	if !exists(filepath.Join(dir, "a.marker")) {
		t.Fatalf("destroy undid exec.a before the answer:\n%s", asked)
	}
	if _, err := tty.Write([]byte("yes\n")); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("destroy after yes: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("destroy did not end within 30s of yes")
	}
	if exists(filepath.Join(dir, "a.marker")) {
		t.Error("destroy answered yes left a.marker")
	}
}

// TestOneFlowPerState (issue 20, defect 2): two flows in one directory get state files
// of their own by default, and a flow run on another flow's state file is refused,
// naming the flow it holds, instead of hiding that flow's instances from destroy.
func TestOneFlowPerState(t *testing.T) {
	tag, dir := newTag(t), t.TempDir()
	writeFiles(t, dir, map[string]string{
		"a.hcl": markerFlow,
		"b.hcl": strings.ReplaceAll(markerFlow, "a.marker", "b.marker"),
	})
	flowExit(t, tag, dir, 0, "run", "a.hcl")
	flowExit(t, tag, dir, 0, "run", "b.hcl")
	if !exists(filepath.Join(dir, ".flow", "a.db")) || !exists(filepath.Join(dir, ".flow", "b.db")) {
		t.Fatal("the default state files are not .flow/a.db and .flow/b.db")
	}
	r := flowExit(t, tag, dir, 2, "run", "b.hcl", "--state", ".flow/a.db")
	if !strings.Contains(r.stderr, "a.hcl") {
		t.Errorf("the refusal does not name the flow the state holds\n%s", r.desc)
	}
	r = flowExit(t, tag, dir, 2, "destroy", "--auto-approve")
	if !strings.Contains(r.stderr, "--state") || !exists(filepath.Join(dir, "a.marker")) {
		t.Errorf("destroy without --state among two state files did not refuse\n%s", r.desc)
	}
	flowExit(t, tag, dir, 0, "destroy", "--state", ".flow/a.db", "--auto-approve")
	if exists(filepath.Join(dir, "a.marker")) || !exists(filepath.Join(dir, "b.marker")) {
		t.Error("destroy of a's state did not undo exactly a's instance")
	}
}

// membersFlow makes one marker per member where it runs; its undo removes it.
const membersFlow = `variable "members" {
  type    = set(string)
  default = ["m1", "m2", "m3"]
}

task "exec" "member" {
  for_each = var.members
  script   = "touch ${each.key}.marker"
  undo     = "rm -f ${each.key}.marker"
}
`

// TestDroppedInstancesUndone (issue 20, defect 2): instances a shrunk for_each drops
// are shown by plan as to be destroyed and undone by the next run; a task deleted from
// the file is undone by the next run too; destroy then undoes all that is left.
func TestDroppedInstancesUndone(t *testing.T) {
	tag, dir := newTag(t), t.TempDir()
	writeFiles(t, dir, map[string]string{"main.hcl": membersFlow + markerFlow})
	flowExit(t, tag, dir, 0, "run", "main.hcl")
	for _, m := range []string{"m1", "m2", "m3", "a"} {
		if !exists(filepath.Join(dir, m+".marker")) {
			t.Fatalf("the first run did not create %s.marker", m)
		}
	}
	r := flowExit(t, tag, dir, 0, "plan", "main.hcl", "--var", `members=["m1"]`)
	for _, want := range []string{`destroy  exec.member["m2"]`, `destroy  exec.member["m3"]`} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("plan lacks %q\n%s", want, r.desc)
		}
	}
	flowExit(t, tag, dir, 0, "run", "main.hcl", "--var", `members=["m1"]`)
	if exists(filepath.Join(dir, "m2.marker")) || exists(filepath.Join(dir, "m3.marker")) || !exists(filepath.Join(dir, "m1.marker")) {
		t.Errorf("the run with members m1 did not undo exactly m2 and m3")
	}
	writeFiles(t, dir, map[string]string{"main.hcl": membersFlow}) // exec.a deleted
	r = flowExit(t, tag, dir, 0, "run", "main.hcl", "--var", `members=["m1"]`)
	if exists(filepath.Join(dir, "a.marker")) {
		t.Errorf("the run without exec.a left a.marker\n%s", r.desc)
	}
	flowExit(t, tag, dir, 0, "run", "main.hcl", "--var", `members=["m4"]`)
	flowExit(t, tag, dir, 0, "destroy", "--auto-approve")
	for _, m := range []string{"m1", "m4"} {
		if exists(filepath.Join(dir, m+".marker")) {
			t.Errorf("destroy left %s.marker", m)
		}
	}
}

// TestInterruptedUndoOfDropped: Ctrl-C while a run undoes an instance the flow dropped
// ends the run as interrupted (exit 130), and the instance stays in the state: the
// resume undoes it.
func TestInterruptedUndoOfDropped(t *testing.T) {
	tag, dir := newTag(t), t.TempDir()
	// The undo is recorded with the instance: it sleeps only while the file "slow" exists.
	slowUndo := strings.Replace(membersFlow, `undo     = "rm -f`, `undo     = "touch ${each.key}.undoing; ! test -f slow || sleep 30; rm -f`, 1)
	writeFiles(t, dir, map[string]string{"main.hcl": slowUndo, "slow": ""})
	flowExit(t, tag, dir, 0, "run", "main.hcl", "--var", `members=["m1","m2"]`)
	p := start(t, tag, dir, "run", "main.hcl", "--var", `members=["m1"]`)
	for deadline := time.Now().Add(time.Minute); !exists(filepath.Join(dir, "m2.undoing")); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) || p.exited() {
			t.Fatalf("the undo of m2 did not start\n%s", p.describe())
		}
	}
	p.signal(t, syscall.SIGINT)
	if !p.wait(time.Minute) {
		t.Fatalf("the run did not end after Ctrl-C\n%s", p.describe())
	}
	if p.code() != 130 {
		t.Errorf("exit %d after Ctrl-C during the undo, want 130\n%s", p.code(), p.describe())
	}
	if !exists(filepath.Join(dir, "m2.marker")) {
		t.Fatalf("m2.marker is gone: the undo was not interrupted\n%s", p.describe())
	}
	remove(dir, "slow")
	r := flowExit(t, tag, dir, 0, "resume")
	if exists(filepath.Join(dir, "m2.marker")) || !exists(filepath.Join(dir, "m1.marker")) {
		t.Errorf("the resume did not undo exactly m2\n%s", r.desc)
	}
}

// childFlow: a member and a child per key; each undo logs itself, and the children's
// undos each wait until the other child's undo has begun, which only a walk that
// undoes independent instances at once lets happen.
const childFlow = `variable "members" {
  type    = set(string)
  default = ["m1", "m2", "m3"]
}

task "exec" "member" {
  for_each = var.members
  script   = "true"
  undo     = "echo member ${each.key} >> undo.log"
}

task "exec" "child" {
  for_each   = var.members
  depends_on = [exec.member[each.key]]
  script     = "true"
  undo       = <<-EOT
    touch child-${each.key}.began
    for i in $(seq 200); do [ $(ls child-*.began | wc -l) -ge 2 ] && break; sleep 0.05; done
    [ $(ls child-*.began | wc -l) -ge 2 ] || exit 1
    echo child ${each.key} >> undo.log
  EOT
}
`

// TestDroppedUndoneByTheWalker: instances a shrunk for_each drops are undone by the
// one walker: in reverse dependency order (a child before its member) and independent
// ones at once (the two children's undos overlap).
func TestDroppedUndoneByTheWalker(t *testing.T) {
	tag, dir := newTag(t), t.TempDir()
	writeFiles(t, dir, map[string]string{"main.hcl": childFlow})
	flowExit(t, tag, dir, 0, "run", "main.hcl")
	r := flowExit(t, tag, dir, 0, "run", "main.hcl", "--var", `members=["m1"]`)
	lines := strings.Split(strings.TrimSpace(readFile(t, filepath.Join(dir, "undo.log"))), "\n")
	at := map[string]int{}
	for i, l := range lines {
		at[l] = i + 1
	}
	for _, m := range []string{"m2", "m3"} {
		if at["child "+m] == 0 || at["member "+m] == 0 || at["child "+m] > at["member "+m] {
			t.Errorf("undo.log %q: want child %s undone before member %s\n%s", lines, m, m, r.desc)
		}
	}
	if len(lines) != 4 {
		t.Errorf("undo.log %q: want the 4 dropped instances undone once each", lines)
	}
}
