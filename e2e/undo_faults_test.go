package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flowdev/flow/engine/state"
)

// The tests of issue 37, findings 1 to 4: where faults take a run (an attempt fails or
// is interrupted, an undo fails), every undo still acts on what a run made, and nothing
// a run made is forgotten. Exec flows in temporary directories, checked on disk.

// failFlow makes made-X and then fails; its undo removes made-X.
const failFlow = `variable "x" {
  type    = string
  default = "one"
}

task "exec" "mk" {
  script = "touch made-${var.x}; exit 1"
  undo   = "rm -f made-${var.x}"
}
`

// TestFailedAttemptUndoneFromItsRecord (finding 1): a failed instance recorded what it
// was about to make before it acted, so a destroy with another --var removes made-one
// and leaves made-precious, which no run made.
func TestFailedAttemptUndoneFromItsRecord(t *testing.T) {
	tag, dir := newTag(t), t.TempDir()
	writeFiles(t, dir, map[string]string{"f.hcl": failFlow, "made-precious": "mine"})
	flowExit(t, tag, dir, 1, "run", "f.hcl")
	r := flowExit(t, tag, dir, 0, "destroy", "--auto-approve", "--var", "x=precious")
	if !exists(filepath.Join(dir, "made-precious")) {
		t.Errorf("destroy removed made-precious, which no run made\n%s", r.desc)
	}
	if exists(filepath.Join(dir, "made-one")) {
		t.Errorf("destroy left made-one, which the failed attempt made\n%s", r.desc)
	}
	if strings.Contains(r.stdout, "older flow") {
		t.Errorf("destroy calls a record of this flow older\n%s", r.desc)
	}
}

// TestInterruptedAttemptUndoneFromItsRecord (finding 1, after SIGINT): the same with an
// attempt interrupted while it runs, and the variable from the environment.
func TestInterruptedAttemptUndoneFromItsRecord(t *testing.T) {
	tag, dir := newTag(t), t.TempDir()
	flow := strings.Replace(failFlow, "exit 1", "sleep 60", 1)
	writeFiles(t, dir, map[string]string{"f.hcl": flow, "made-precious": "mine"})
	p := start(t, tag, dir, "run", "f.hcl")
	waitFile(t, filepath.Join(dir, "made-one"), p)
	p.signal(t, syscall.SIGINT)
	if !p.wait(30 * time.Second) {
		p.killGroup()
		t.Fatalf("flow did not end after SIGINT\n%s", p.describe())
	}
	t.Setenv("FLOW_VAR_x", "precious")
	r := flowExit(t, tag, dir, 0, "destroy", "--auto-approve")
	if !exists(filepath.Join(dir, "made-precious")) {
		t.Errorf("destroy removed made-precious, which no run made\n%s", r.desc)
	}
	if exists(filepath.Join(dir, "made-one")) {
		t.Errorf("destroy left made-one, which the interrupted attempt made\n%s", r.desc)
	}
}

// waitFile waits until path exists, failing the test if p ends first.
func waitFile(t *testing.T, path string, p *proc) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !exists(path) {
		if p.exited() || time.Now().After(deadline) {
			p.killGroup()
			t.Fatalf("%s never appeared\n%s", path, p.describe())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// guardedFlow makes f-X; its undo works only while allow-undo exists.
const guardedFlow = `variable "x" {
  type    = string
  default = "one"
}

task "exec" "mk" {
  script = "touch f-${var.x}"
  undo   = "test -e allow-undo && rm -f f-${var.x}"
}
`

// TestFailedReplaceUndoStaysPending (finding 2): an undo before replacing that fails
// leaves the old object recorded as a pending undo, which status shows and the next
// destroy undoes, with the new one; nothing is forgotten.
func TestFailedReplaceUndoStaysPending(t *testing.T) {
	tag, dir := newTag(t), t.TempDir()
	writeFiles(t, dir, map[string]string{"f.hcl": guardedFlow, "allow-undo": ""})
	flowExit(t, tag, dir, 0, "run", "f.hcl")
	os.Remove(filepath.Join(dir, "allow-undo"))
	r := flowExit(t, tag, dir, 1, "run", "f.hcl", "--var", "x=two")
	if !exists(filepath.Join(dir, "f-one")) {
		t.Fatalf("the failed undo removed f-one\n%s", r.desc)
	}
	st := flowExit(t, tag, dir, 0, "status", "--state", ".flow/f.db")
	if !strings.Contains(st.stdout, "pending undo") {
		t.Errorf("status does not show the pending undo\n%s", st.desc)
	}
	js := flowExit(t, tag, dir, 0, "status", "--state", ".flow/f.db", "--json")
	if !strings.Contains(js.stdout, `"pending_undo": 1`) {
		t.Errorf("status --json does not count the pending undo\n%s", js.desc)
	}
	runs := flowExit(t, tag, dir, 0, "runs", "--state", ".flow/f.db")
	if !strings.Contains(runs.stdout, "exec.mk: 1 object") {
		t.Errorf("runs does not name the pending undo\n%s", runs.desc)
	}
	pr := flowExit(t, tag, dir, 0, "plan", "f.hcl", "--var", "x=two")
	if !strings.Contains(pr.stdout, "first undoes what it made before (1)") || !strings.Contains(pr.stdout, "f-one") {
		t.Errorf("plan does not say the run undoes f-one first\n%s", pr.desc)
	}
	pl := flowExit(t, tag, dir, 0, "plan", "--destroy")
	if !strings.Contains(pl.stdout, "f-one") {
		t.Errorf("plan --destroy does not show the pending undo of f-one\n%s", pl.desc)
	}
	writeFiles(t, dir, map[string]string{"allow-undo": ""})
	r = flowExit(t, tag, dir, 0, "destroy", "--auto-approve")
	if exists(filepath.Join(dir, "f-one")) {
		t.Errorf("destroy left f-one, the pending undo\n%s", r.desc)
	}
	r = flowExit(t, tag, dir, 0, "destroy", "--auto-approve")
	if !strings.Contains(r.stdout, "Nothing to destroy") {
		t.Errorf("a second destroy finds something left\n%s", r.desc)
	}
}

// TestPendingUndoRetriedByTheNextRun (finding 2, through a run): the next run undoes
// the pending object before it makes the new one, and run --new never drops it.
func TestPendingUndoRetriedByTheNextRun(t *testing.T) {
	tag, dir := newTag(t), t.TempDir()
	writeFiles(t, dir, map[string]string{"f.hcl": guardedFlow, "allow-undo": ""})
	flowExit(t, tag, dir, 0, "run", "f.hcl")
	os.Remove(filepath.Join(dir, "allow-undo"))
	flowExit(t, tag, dir, 1, "run", "f.hcl", "--var", "x=two")
	flowExit(t, tag, dir, 1, "run", "f.hcl", "--new", "--var", "x=three")
	writeFiles(t, dir, map[string]string{"allow-undo": ""})
	r := flowExit(t, tag, dir, 0, "run", "f.hcl", "--new", "--var", "x=four")
	for _, gone := range []string{"f-one", "f-two", "f-three"} {
		if exists(filepath.Join(dir, gone)) {
			t.Errorf("the run left %s, which an earlier run made\n%s", gone, r.desc)
		}
	}
	if !exists(filepath.Join(dir, "f-four")) {
		t.Errorf("the run did not make f-four\n%s", r.desc)
	}
	flowExit(t, tag, dir, 0, "destroy", "--auto-approve")
	if exists(filepath.Join(dir, "f-four")) {
		t.Errorf("destroy left f-four")
	}
}

// TestFailedDestroyThenNewRunKeepsTheObject (finding 2, the other way in): a failed
// destroy, then run --new with another variable: the old object is undone first.
func TestFailedDestroyThenNewRunKeepsTheObject(t *testing.T) {
	tag, dir := newTag(t), t.TempDir()
	writeFiles(t, dir, map[string]string{"f.hcl": guardedFlow, "allow-undo": ""})
	flowExit(t, tag, dir, 0, "run", "f.hcl")
	os.Remove(filepath.Join(dir, "allow-undo"))
	flowExit(t, tag, dir, 1, "destroy", "--auto-approve")
	writeFiles(t, dir, map[string]string{"allow-undo": ""})
	r := flowExit(t, tag, dir, 0, "run", "f.hcl", "--new", "--var", "x=two")
	if exists(filepath.Join(dir, "f-one")) {
		t.Errorf("run --new left f-one, which the first run made\n%s", r.desc)
	}
	flowExit(t, tag, dir, 0, "destroy", "--auto-approve")
	if exists(filepath.Join(dir, "f-two")) {
		t.Errorf("destroy left f-two")
	}
}

// dropFlow makes made-KEY for each of var.ms; b fails after making it.
const dropFlow = `variable "ms" {
  type    = list(string)
  default = ["a", "b"]
}

task "exec" "mk" {
  for_each = toset(var.ms)
  script   = "touch made-${each.key}; test ${each.key} != b"
  undo     = "rm -f made-${each.key}"
}
`

// TestFailedInstanceDroppedIsUndone (finding 3): an instance that failed after making
// its object and then left the flow is undone by the next run, from its record.
func TestFailedInstanceDroppedIsUndone(t *testing.T) {
	tag, dir := newTag(t), t.TempDir()
	writeFiles(t, dir, map[string]string{"f.hcl": dropFlow})
	flowExit(t, tag, dir, 1, "run", "f.hcl")
	r := flowExit(t, tag, dir, 0, "run", "f.hcl", "--new", "--var", `ms=["a"]`)
	if strings.Contains(r.stdout, "sets no undo") {
		t.Errorf("the run says the dropped instance sets no undo\n%s", r.desc)
	}
	if exists(filepath.Join(dir, "made-b")) {
		t.Errorf("the run left made-b, which the dropped instance made\n%s", r.desc)
	}
	flowExit(t, tag, dir, 0, "destroy", "--auto-approve")
	if exists(filepath.Join(dir, "made-a")) {
		t.Errorf("destroy left made-a")
	}
}

// layerFlow: base makes a directory, top a file in it; each undo removes its own.
const layerFlow = `variable "x" {
  type    = string
  default = "one"
}

task "exec" "base" {
  script = "mkdir base-${var.x}"
  undo   = "rmdir base-${var.x}"
}

task "exec" "top" {
  depends_on = [exec.base]
  script     = "touch base-${var.x}/top"
  undo       = "test -e allow-undo && rm base-${var.x}/top"
}
`

// TestReplaceUndoInReverseOrder (finding 4): after a destroy that failed on top, a run
// with another variable undoes top's old object before base's, then makes both anew.
func TestReplaceUndoInReverseOrder(t *testing.T) {
	tag, dir := newTag(t), t.TempDir()
	writeFiles(t, dir, map[string]string{"f.hcl": layerFlow, "allow-undo": ""})
	flowExit(t, tag, dir, 0, "run", "f.hcl")
	os.Remove(filepath.Join(dir, "allow-undo"))
	flowExit(t, tag, dir, 1, "destroy", "--auto-approve")
	writeFiles(t, dir, map[string]string{"allow-undo": ""})
	r := flowExit(t, tag, dir, 0, "run", "f.hcl", "--new", "--var", "x=two")
	if exists(filepath.Join(dir, "base-one")) {
		t.Errorf("the run left base-one\n%s", r.desc)
	}
	if !exists(filepath.Join(dir, "base-two", "top")) {
		t.Errorf("the run did not make base-two/top\n%s", r.desc)
	}
	r = flowExit(t, tag, dir, 0, "destroy", "--auto-approve")
	if exists(filepath.Join(dir, "base-two")) {
		t.Errorf("destroy left base-two\n%s", r.desc)
	}
}

// TestOlderRecordRefusesOtherVars (finding 1, a truly older record): a failed attempt
// an older flow recorded without its object is undone from the flow, so a destroy
// with another --var is refused, naming the instance, and one with the run's values
// goes ahead.
func TestOlderRecordRefusesOtherVars(t *testing.T) {
	tag, dir := newTag(t), t.TempDir()
	writeFiles(t, dir, map[string]string{"f.hcl": failFlow, "made-precious": "mine"})
	flowExit(t, tag, dir, 1, "run", "f.hcl")
	forgetObjects(t, filepath.Join(dir, ".flow", "f.db"))
	r := flowExit(t, tag, dir, 2, "destroy", "--auto-approve", "--var", "x=precious")
	if !strings.Contains(r.stderr, `exec.mk`) || !strings.Contains(r.stderr, "older flow") || !strings.Contains(r.stderr, "x") {
		t.Errorf("the refusal does not name the instance and the variable\n%s", r.desc)
	}
	if !exists(filepath.Join(dir, "made-precious")) || !exists(filepath.Join(dir, "made-one")) {
		t.Fatalf("the refused destroy removed a file\n%s", r.desc)
	}
	flowExit(t, tag, dir, 0, "destroy", "--auto-approve", "--var", "x=one")
	if exists(filepath.Join(dir, "made-one")) || !exists(filepath.Join(dir, "made-precious")) {
		t.Errorf("destroy with the run's values did not remove made-one alone")
	}
}

// forgetObjects rewrites the latest run's instance records in the state file at path
// as a flow before issue 37 wrote those of attempts that did not succeed: without
// their inputs and directory.
func forgetObjects(t *testing.T, path string) {
	t.Helper()
	store, err := state.Open(path, state.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	run, err := store.LatestRun()
	if err != nil {
		t.Fatal(err)
	}
	recs, err := store.Instances(run.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		r.Inputs, r.Withheld, r.Dir = nil, nil, ""
	}
	if err := store.Commit(run.ID, nil, recs, nil); err != nil {
		t.Fatal(err)
	}
}

// fileFlow makes f-X in its directory; its undo removes it.
const fileFlow = `variable "x" {
  type    = string
  default = "one"
}

task "exec" "mk" {
  script = "touch f-${var.x}"
  undo   = "rm -f f-${var.x}"
}
`

// TestMoveUndoesHere (finding 5): --move says the project and its files moved here, so
// every undo of what was made before acts here: with the files moved, the old object is
// removed here; with the files left behind, they stay where they are, untouched. plan
// says that a run would be refused and, with --move, what it takes over; run --move
// says what it takes over.
func TestMoveUndoesHere(t *testing.T) {
	for _, filesMoved := range []bool{true, false} {
		name := map[bool]string{true: "files moved too", false: "files left behind"}[filesMoved]
		t.Run(name, func(t *testing.T) {
			tag, root := newTag(t), t.TempDir()
			q1, q2 := filepath.Join(root, "Q1"), filepath.Join(root, "Q2")
			writeFiles(t, root, map[string]string{"Q1/f.hcl": fileFlow})
			flowExit(t, tag, q1, 0, "run", "f.hcl")
			if filesMoved {
				if err := os.Rename(q1, q2); err != nil {
					t.Fatal(err)
				}
			} else {
				writeFiles(t, root, map[string]string{"Q2/f.hcl": fileFlow})
				if err := os.MkdirAll(filepath.Join(q2, ".flow"), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.Rename(filepath.Join(q1, ".flow", "f.db"), filepath.Join(q2, ".flow", "f.db")); err != nil {
					t.Fatal(err)
				}
			}
			pl := flowExit(t, tag, q2, 2, "plan", "f.hcl", "--var", "x=two")
			if !strings.Contains(pl.stderr, "--move") || !strings.Contains(pl.stderr, q1) {
				t.Errorf("plan does not refuse as a run does, naming %s and --move\n%s", q1, pl.desc)
			}
			pm := flowExit(t, tag, q2, 0, "plan", "f.hcl", "--move", "--var", "x=two")
			if !strings.Contains(pm.stdout, "takes over 1 instance made in "+q1) {
				t.Errorf("plan --move does not say what the run takes over\n%s", pm.desc)
			}
			r := flowExit(t, tag, q2, 0, "run", "f.hcl", "--move", "--var", "x=two")
			if !strings.Contains(r.stdout, "Taking over 1 instances made in "+q1) {
				t.Errorf("run --move does not say what it takes over\n%s", r.desc)
			}
			if exists(filepath.Join(q2, "f-one")) {
				t.Errorf("run --move left Q2/f-one, the old object, where the project is now\n%s", r.desc)
			}
			if filesMoved == false && !exists(filepath.Join(q1, "f-one")) {
				t.Errorf("run --move removed Q1/f-one, left behind where the project no longer is\n%s", r.desc)
			}
			flowExit(t, tag, q2, 0, "destroy", "--auto-approve")
			if exists(filepath.Join(q2, "f-two")) {
				t.Errorf("destroy left Q2/f-two")
			}
		})
	}
}

// TestOlderRecordReplacedOnlyAsItRan: --replace of an instance an older flow recorded
// without its object undoes it from the flow only with the values it ran with; with
// others the attempt is refused and nothing is removed.
func TestOlderRecordReplacedOnlyAsItRan(t *testing.T) {
	tag, dir := newTag(t), t.TempDir()
	writeFiles(t, dir, map[string]string{"f.hcl": fileFlow, "f-precious": "mine"})
	flowExit(t, tag, dir, 0, "run", "f.hcl")
	forgetObjects(t, filepath.Join(dir, ".flow", "f.db"))
	r := flowExit(t, tag, dir, 1, "run", "f.hcl", "--replace", "exec.mk", "--var", "x=precious")
	if !strings.Contains(r.stdout, "recorded by an older flow") || !exists(filepath.Join(dir, "f-precious")) || !exists(filepath.Join(dir, "f-one")) {
		t.Fatalf("a replace with other values was not refused, or removed a file\n%s", r.desc)
	}
	r = flowExit(t, tag, dir, 0, "run", "f.hcl", "--new", "--replace", "exec.mk")
	if !exists(filepath.Join(dir, "f-one")) || !strings.Contains(r.stdout, "undone in") {
		t.Errorf("a replace with the values it ran with did not undo and make f-one again\n%s", r.desc)
	}
}
