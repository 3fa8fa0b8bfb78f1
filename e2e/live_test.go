package e2e

import (
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
)

// sleeperRun starts `flow run testdata/sleeper.hcl` on a fresh state file and waits
// until `flow status` (from a second process) shows exec.sleeper running.
func sleeperRun(t *testing.T, extra ...string) (p *proc, tag, dir, state, marks string) {
	t.Helper()
	binary(t)
	dir = t.TempDir()
	state = filepath.Join(dir, "state.db")
	marks = filepath.Join(dir, "marks")
	tag = newTag(t)
	args := append([]string{"run", testdata(t, "sleeper.hcl"), "--state", state, "--var", "marks=" + marks}, extra...)
	p = start(t, tag, dir, args...)
	doc := waitStatus(t, tag, dir, state, 15*time.Second, "exec.sleeper running", func(d statusDoc) bool {
		return d.byAddress()["exec.sleeper"].Status == "running"
	})
	if doc.Status != "running" {
		t.Errorf("while the run is in progress, status says the run is %q, want running", doc.Status)
	}
	if p.exited() {
		t.Fatalf("flow exited while its sleeper should run\n%s", p.describe())
	}
	return p, tag, dir, state, marks
}

func wantMarks(t *testing.T, marks string, want map[string]int) {
	t.Helper()
	got := map[string]int{}
	for _, line := range strings.Fields(readFile(t, marks)) {
		got[line]++
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("executions per task: %v, want %v", got, want)
	}
}

func wantTaskStatus(t *testing.T, doc statusDoc, want map[string]string) {
	t.Helper()
	got := doc.byAddress()
	for addr, st := range want {
		if got[addr].Status != st {
			t.Errorf("status of %s is %q, want %q (run %d %s)", addr, got[addr].Status, st, doc.RunID, doc.Status)
		}
	}
}

// TestSecondProcessRefused: while one flow runs, a second flow on the same state file
// fails fast with exit code 2 naming the file and the holder's pid; the first one is
// unaffected, SIGINT stops it with 130 and records the sleeping task as interrupted,
// and resume then finishes.
func TestSecondProcessRefused(t *testing.T) {
	p, tag, dir, state, marks := sleeperRun(t)

	second := runFlow(t, tag, dir, 20*time.Second, "run", testdata(t, "sleeper.hcl"), "--new", "--state", state, "--var", "marks="+marks)
	t.Logf("second flow on the same state file exited %d after %s: %s", second.code, second.took.Round(time.Millisecond), strings.TrimSpace(second.stderr))
	if second.code != 2 {
		t.Errorf("second flow exited %d, want 2\n%s", second.code, second.desc)
	}
	if second.took >= 3*time.Second {
		t.Errorf("second flow took %s to give up, want < 3s", second.took)
	}
	if !strings.Contains(second.stderr, state) {
		t.Errorf("second flow's error does not name the state file %s:\n%s", state, second.stderr)
	}
	if pid := fmt.Sprintf("pid %d", p.pid()); !strings.Contains(second.stderr, pid) {
		t.Errorf("second flow's error does not name the holder (%s):\n%s", pid, second.stderr)
	}
	if second.stdout != "" {
		t.Errorf("second flow printed on stdout:\n%s", second.stdout)
	}

	// The first run goes on, untouched: still run 1, the sleeper still running.
	doc := status(t, tag, dir, state)
	if doc.RunID != 1 || doc.Status != "running" || p.exited() {
		t.Fatalf("after the refused second flow: run %d %s (first exited: %v), want run 1 running\n%s", doc.RunID, doc.Status, p.exited(), p.describe())
	}
	wantTaskStatus(t, doc, map[string]string{"exec.first": "succeeded", "exec.sleeper": "running", "exec.after": "pending"})

	sent := time.Now()
	p.signal(t, syscall.SIGINT)
	if !p.wait(8 * time.Second) {
		t.Fatalf("flow did not stop within 8s of SIGINT\n%s", p.describe())
	}
	t.Logf("first flow exited %d %s after SIGINT", p.code(), time.Since(sent).Round(time.Millisecond))
	if p.code() != 130 {
		t.Errorf("flow exited %d after SIGINT, want 130\n%s", p.code(), p.describe())
	}
	if n := len(tagged(tag)); n != 0 {
		t.Errorf("%d process(es) of the interrupted run still run (the sleeper's group should have been stopped)", n)
	}

	doc = status(t, tag, dir, state)
	if doc.Status != "interrupted" {
		t.Errorf("after SIGINT the run is %q, want interrupted", doc.Status)
	}
	wantTaskStatus(t, doc, map[string]string{"exec.first": "succeeded", "exec.sleeper": "interrupted", "exec.after": "pending"})

	res := runFlow(t, tag, dir, 20*time.Second, "resume", "--state", state, "--var", "nap=0")
	if res.code != 0 {
		t.Fatalf("resume exited %d\n%s", res.code, res.desc)
	}
	doc = status(t, tag, dir, state)
	if doc.RunID != 1 || doc.Status != "succeeded" {
		t.Errorf("after resume: run %d %s, want run 1 succeeded", doc.RunID, doc.Status)
	}
	wantTaskStatus(t, doc, map[string]string{"exec.first": "succeeded", "exec.sleeper": "succeeded", "exec.after": "succeeded"})
	wantMarks(t, marks, map[string]int{"first": 1, "sleeper": 2, "after": 1})
}

// TestStatusAndLogsWhileRunning: `flow status --json` and `flow logs ADDRESS` answer
// from a second process while a run holds the state file.
func TestStatusAndLogsWhileRunning(t *testing.T) {
	p, tag, dir, state, _ := sleeperRun(t)

	doc := status(t, tag, dir, state)
	wantTaskStatus(t, doc, map[string]string{"exec.first": "succeeded", "exec.sleeper": "running", "exec.after": "pending"})
	if task := doc.byAddress()["exec.sleeper"]; task.StartedAt == nil || task.FinishedAt != nil || task.Attempts != 1 {
		t.Errorf("running sleeper: %+v, want started, not finished, attempt 1", task)
	}

	text := runFlow(t, tag, dir, 10*time.Second, "status", "--state", state)
	if text.code != 0 || !strings.Contains(text.stdout, "running") || !strings.Contains(text.stdout, "exec.sleeper") {
		t.Errorf("plain flow status during the run:\n%s", text.desc)
	}

	// The sleeper printed its line before sleeping; logs may lag its output a little.
	deadline := time.Now().Add(5 * time.Second)
	var logs result
	for {
		logs = runFlow(t, tag, dir, 10*time.Second, "logs", "exec.sleeper", "--state", state)
		if logs.code == 0 && strings.Contains(logs.stdout, "sleeping now") || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if logs.code != 0 || !strings.Contains(logs.stdout, "sleeping now") || strings.Contains(logs.stdout, "woke up") {
		t.Errorf("flow logs exec.sleeper during the run: want the line \"sleeping now\" only\n%s", logs.desc)
	}
	first := runFlow(t, tag, dir, 10*time.Second, "logs", "exec.first", "--state", state)
	if first.code != 0 || !strings.Contains(first.stdout, "first done") {
		t.Errorf("flow logs exec.first during the run:\n%s", first.desc)
	}
	unknown := runFlow(t, tag, dir, 10*time.Second, "logs", "exec.nope", "--state", state)
	if unknown.code != 2 {
		t.Errorf("flow logs of an unknown instance during the run exited %d, want 2\n%s", unknown.code, unknown.desc)
	}
	if p.exited() {
		t.Fatalf("flow exited while the sleeper should run\n%s", p.describe())
	}

	p.signal(t, syscall.SIGINT)
	if !p.wait(8*time.Second) || p.code() != 130 {
		t.Fatalf("flow did not exit 130 after SIGINT\n%s", p.describe())
	}
	// Afterwards the same output comes from the state file.
	after := runFlow(t, tag, dir, 10*time.Second, "logs", "exec.sleeper", "--state", state)
	if after.code != 0 || !strings.Contains(after.stdout, "sleeping now") {
		t.Errorf("flow logs exec.sleeper after the run:\n%s", after.desc)
	}
}

// TestDoubleInterrupt: a first SIGINT asks the tasks to stop; the sleeper ignores
// SIGTERM, so flow waits; a second SIGINT exits 130 at once, and the state file
// still opens and shows the run interrupted.
func TestDoubleInterrupt(t *testing.T) {
	p, tag, dir, state, marks := sleeperRun(t, "--var", "ignore_term=true")

	p.signal(t, syscall.SIGINT)
	deadline := time.Now().Add(8 * time.Second)
	for !strings.Contains(p.stderr.String(), "Interrupting") && !p.exited() && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if p.exited() {
		t.Fatalf("flow exited after one SIGINT although its task ignores SIGTERM\n%s", p.describe())
	}
	if !strings.Contains(p.stderr.String(), "Interrupting") {
		t.Fatalf("flow did not acknowledge SIGINT within 8s\n%s", p.describe())
	}
	// The command it names continues the same state file when copied.
	if want := fmt.Sprintf("%q continues", "flow resume --state "+state); !strings.Contains(p.stderr.String(), want) {
		t.Errorf("the interrupt message does not say %s\n%s", want, p.describe())
	}
	time.Sleep(100 * time.Millisecond)
	if p.exited() {
		t.Fatalf("flow exited after one SIGINT although its task ignores SIGTERM\n%s", p.describe())
	}

	sent := time.Now()
	p.signal(t, syscall.SIGINT)
	if !p.wait(8 * time.Second) {
		t.Fatalf("flow did not exit within 8s of the second SIGINT\n%s", p.describe())
	}
	took := time.Since(sent)
	t.Logf("second SIGINT: flow exited %d after %s", p.code(), took.Round(time.Millisecond))
	if p.code() != 130 {
		t.Errorf("flow exited %d after the second SIGINT, want 130\n%s", p.code(), p.describe())
	}
	// "At once", as opposed to the 10 s grace period of the first; the bound is half of
	// it so that a loaded machine's delay is not mistaken for the grace period.
	if took > 5*time.Second {
		t.Errorf("flow took %s to exit after the second SIGINT, want at once", took)
	}
	if !strings.Contains(p.stderr.String(), "Exiting at once") {
		t.Errorf("flow did not say it exits at once:\n%s", p.describe())
	}

	// The stubborn sleeper outlives flow (it is in its own process group and ignores
	// SIGTERM); a real user would be left with it too. Stop it before resuming.
	if n := killTagged(tag); n == 0 {
		t.Logf("no task process outlived flow")
	} else {
		t.Logf("%d task process(es) outlived flow's exit; killed", n)
	}

	doc := status(t, tag, dir, state)
	if doc.Status != "interrupted" {
		t.Errorf("after exiting at once the run is %q, want interrupted", doc.Status)
	}
	wantTaskStatus(t, doc, map[string]string{"exec.first": "succeeded", "exec.after": "pending"})

	res := runFlow(t, tag, dir, 20*time.Second, "resume", "--state", state, "--var", "nap=0", "--var", "ignore_term=false")
	if res.code != 0 {
		t.Fatalf("resume exited %d\n%s", res.code, res.desc)
	}
	doc = status(t, tag, dir, state)
	if doc.Status != "succeeded" {
		t.Errorf("after resume the run is %q, want succeeded", doc.Status)
	}
	wantMarks(t, marks, map[string]int{"first": 1, "sleeper": 2, "after": 1})
}

// TestLiveViewKeepsInterruptNotice: on a terminal of 10 rows, the live view of 30
// running instances shows what fits and counts the rest; after Ctrl-C, every redraw
// keeps the interrupt message at its bottom, never taller than the terminal, and the
// message is still on the screen, above the summary, when flow exits.
func TestLiveViewKeepsInterruptNotice(t *testing.T) {
	tag, dir := newTag(t), t.TempDir()
	writeFiles(t, dir, map[string]string{"naps.hcl": `task "exec" "nap" {
  for_each = toset([for i in range(30) : format("%02d", i)])
  script   = "echo napping ${each.key}; sleep 30"
}
`})
	cmd := exec.Command(binary(t), "run", "naps.hcl", "--state", "s.db", "--progress", "tty", "--parallelism", "30")
	cmd.Dir, cmd.Env = dir, flowEnv(tag)
	tty, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 10, Cols: 100})
	if err != nil {
		t.Fatal(err)
	}
	defer tty.Close()
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	var screen lockedBuffer
	copied := make(chan struct{})
	go func() { _, _ = io.Copy(&screen, tty); close(copied) }()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()

	// 9 rows above the cursor: the count line, 7 instances, and the rest counted.
	const all = "30 running, 0 waiting\r\n => exec.nap[\"00\"]"
	// The frame may be read half written: wait for its end, the count, too.
	shown := func(out string) bool {
		i := strings.Index(out, all)
		return i >= 0 && strings.Contains(out[i:], "… and 23 more running")
	}
	deadline := time.Now().Add(20 * time.Second)
	for !shown(screen.String()) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if out := screen.String(); !shown(out) {
		t.Fatalf("the view never showed the 30 instances as 7 and 23 more on 10 rows:\n%q", out)
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatalf("flow did not exit within 20s of SIGINT:\n%q", screen.String())
	}
	<-copied
	if code := cmd.ProcessState.ExitCode(); code != 130 {
		t.Errorf("exit %d after SIGINT, want 130", code)
	}
	out := screen.String()
	const notice = "Interrupting: stopping running tasks"
	first := strings.Index(out, notice)
	if first < 0 {
		t.Fatalf("no interrupt message on the terminal:\n%q", out)
	}
	// Each redraw starts by erasing the view; every view drawn after the message
	// first appeared ends with it, and fits above the cursor's row.
	frames := strings.Split(out[first:], "\x1b[J")
	for i, f := range frames[1 : len(frames)-1] {
		view := f[strings.LastIndex(f, "[+] "):]
		if !strings.Contains(view, notice) || !strings.Contains(view, "continues)") {
			t.Fatalf("view %d after the interrupt lacks the message:\n%q", i, f)
		}
		if n := strings.Count(view, "\n"); n > 9 {
			t.Fatalf("view %d has %d lines on a terminal of 10 rows:\n%s", i, n, view)
		}
	}
	// After the last erase: the message, left on the screen, then the summary.
	end := frames[len(frames)-1]
	if i, j := strings.Index(end, notice), strings.Index(end, "Run 1 interrupted"); i < 0 || j < i {
		t.Errorf("after the view closed the screen lacks the message above the summary:\n%q", end)
	}
}

// napFlow greets, then naps var.nap seconds; its output is the greeting.
const napFlow = `variable "nap" {
  type    = number
  default = 0
}

task "exec" "greet" {
  command = ["echo", "hello"]
}

task "exec" "nap" {
  depends_on = [exec.greet]
  script     = "echo napping ${var.nap}; sleep ${var.nap}"
}

output "greeting" {
  value = trimspace(exec.greet.stdout)
}
`

// TestReadCommandsWhileRunning (issue 20, audit): while a run holds the state file,
// flow runs, flow output (of the run in progress and of an earlier one), flow status
// --run and flow logs --run of an earlier run answer from the running process, as flow
// status always did.
func TestReadCommandsWhileRunning(t *testing.T) {
	tag, dir := newTag(t), t.TempDir()
	writeFiles(t, dir, map[string]string{"nap.hcl": napFlow})
	flowExit(t, tag, dir, 0, "run", "nap.hcl", "--state", "s.db")
	p := start(t, tag, dir, "run", "nap.hcl", "--state", "s.db", "--var", "nap=30")
	waitStatus(t, tag, dir, "s.db", 15*time.Second, "run 2's exec.nap running", func(d statusDoc) bool {
		return d.RunID == 2 && d.byAddress()["exec.nap"].Status == "running"
	})

	runs := flowExit(t, tag, dir, 0, "runs", "--state", "s.db")
	lines := strings.Split(strings.TrimSpace(runs.stdout), "\n")
	if len(lines) != 3 || !regexp.MustCompile(`^1 +succeeded `).MatchString(lines[1]) || !regexp.MustCompile(`^2 +running `).MatchString(lines[2]) {
		t.Errorf("flow runs during run 2:\n%s", runs.desc)
	}
	if r := flowExit(t, tag, dir, 0, "output", "--state", "s.db", "--run", "1", "greeting"); r.stdout != "hello\n" {
		t.Errorf("flow output --run 1 greeting during run 2:\n%s", r.desc)
	}
	if r := flowExit(t, tag, dir, 0, "output", "--state", "s.db", "--run", "1", "--json"); !strings.Contains(r.stdout, `"value": "hello"`) {
		t.Errorf("flow output --run 1 --json during run 2:\n%s", r.desc)
	}
	// Run 2 has recorded no output yet: flow output says so by name.
	if r := flowExit(t, tag, dir, 0, "output", "--state", "s.db"); r.stdout != "" {
		t.Errorf("flow output during run 2, which has no outputs yet:\n%s", r.desc)
	}
	if r := flowExit(t, tag, dir, 2, "output", "--state", "s.db", "greeting"); !strings.Contains(r.stderr, "in progress") {
		t.Errorf("flow output greeting during run 2 does not say the run is in progress:\n%s", r.desc)
	}
	if r := flowExit(t, tag, dir, 0, "status", "--state", "s.db", "--run", "1"); !strings.HasPrefix(r.stdout, "Run 1: succeeded") {
		t.Errorf("flow status --run 1 during run 2:\n%s", r.desc)
	}
	if r := flowExit(t, tag, dir, 0, "logs", "--state", "s.db", "--run", "1", "exec.nap"); r.stdout != "napping 0\n" {
		t.Errorf("flow logs --run 1 exec.nap during run 2:\n%s", r.desc)
	}
	// The line was printed before the nap; the captured output may lag it a little.
	var r result
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if r = flowExit(t, tag, dir, 0, "logs", "--state", "s.db", "exec.nap"); r.stdout == "napping 30\n" {
			break
		}
	}
	if r.stdout != "napping 30\n" {
		t.Errorf("flow logs exec.nap during run 2:\n%s", r.desc)
	}
	if r := flowExit(t, tag, dir, 0, "logs", "--state", "s.db", "exec.greet"); r.stdout != "hello\n" {
		t.Errorf("flow logs exec.greet during run 2:\n%s", r.desc)
	}
	flowExit(t, tag, dir, 2, "logs", "--state", "s.db", "--run", "7", "exec.nap")
	if p.exited() {
		t.Fatalf("the run ended while it should nap\n%s", p.describe())
	}

	p.signal(t, syscall.SIGINT)
	if !p.wait(8*time.Second) || p.code() != 130 {
		t.Fatalf("flow did not exit 130 after SIGINT\n%s", p.describe())
	}
	runs = flowExit(t, tag, dir, 0, "runs", "--state", "s.db")
	if !regexp.MustCompile(`\n2 +interrupted `).MatchString(runs.stdout) {
		t.Errorf("flow runs after the interrupt:\n%s", runs.desc)
	}
}
