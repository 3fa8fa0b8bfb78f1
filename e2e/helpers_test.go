// Package e2e tests the flow binary end to end: it builds cmd/flow once, runs it as
// a separate process on flows in testdata/, kills and interrupts it, and checks what
// the state file and the tasks' side effects say afterwards.
//
// Every flow process runs in its own process group and with FLOW_E2E_TAG in its
// environment. exec tasks start their commands in process groups of their own, so
// killing flow's group does not reach them; the tag, which they inherit, does: cleanup
// finds every tagged process in /proc and kills its group, so no stray sleep remains.
package e2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/flowdev/flow/internal/pgtest"
)

var (
	binDir    string // removed by TestMain
	buildOnce sync.Once
	flowBin   string
	buildErr  error
	tagSeq    int
	tagMu     sync.Mutex
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "flow-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.Exit(1)
	}
	binDir = dir
	code := m.Run()
	pgtest.Cleanup()
	os.RemoveAll(dir)
	os.Exit(code)
}

// moduleRoot is the parent of this package's directory (go test runs in it).
func moduleRoot() (string, error) {
	root, err := filepath.Abs("..")
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		return "", fmt.Errorf("module root %s: %w", root, err)
	}
	return root, nil
}

// binary builds ./cmd/flow once per test process, and ./cmd/flow-plugin-host next to
// it, where flow looks for its plugin host; a failed build fails the test.
func binary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		root, err := moduleRoot()
		if err != nil {
			buildErr = err
			return
		}
		goTool, err := exec.LookPath("go")
		if err != nil {
			buildErr = fmt.Errorf("the go tool is needed to build flow: %w", err)
			return
		}
		// flow finds its plugin host next to its own executable.
		for _, name := range []string{"flow", "flow-plugin-host"} {
			cmd := exec.Command(goTool, "build", "-buildvcs=false", "-o", filepath.Join(binDir, name), "./cmd/"+name)
			cmd.Dir = root
			if out, err := cmd.CombinedOutput(); err != nil {
				buildErr = fmt.Errorf("go build ./cmd/%s: %v\n%s", name, err, out)
				return
			}
		}
		flowBin = filepath.Join(binDir, "flow")
	})
	if buildErr != nil {
		t.Fatalf("cannot build the flow binary: %v", buildErr)
	}
	return flowBin
}

// testdata returns the absolute path of a file in testdata/.
func testdata(t *testing.T, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// newTag returns a tag unique to this test process and call, and registers a cleanup
// that kills every process still carrying it.
func newTag(t *testing.T) string {
	t.Helper()
	tagMu.Lock()
	tagSeq++
	tag := fmt.Sprintf("e2e-%d-%d-%d", os.Getpid(), time.Now().UnixNano(), tagSeq)
	tagMu.Unlock()
	t.Cleanup(func() {
		if n := killTagged(tag); n > 0 {
			t.Logf("cleanup: killed %d leftover process(es) tagged %s", n, tag)
		}
	})
	return tag
}

// flowEnv is the environment of a flow process: ours without anything that could
// change flow's behaviour, plus the tag.
func flowEnv(tag string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "FLOW_VAR_") || strings.HasPrefix(kv, "FLOW_STATE=") || strings.HasPrefix(kv, "FLOW_E2E_TAG=") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "FLOW_E2E_TAG="+tag)
}

// lockedBuffer is a bytes.Buffer safe to read while a process writes to it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// proc is a flow process started in its own process group.
type proc struct {
	args           []string
	cmd            *exec.Cmd
	stdout, stderr lockedBuffer
	began          time.Time
	done           chan struct{}
	ended          time.Time
	waitErr        error
}

// start runs the flow binary with args in dir, tagged with tag. The process group is
// killed when the test ends.
func start(t *testing.T, tag, dir string, args ...string) *proc {
	t.Helper()
	p := &proc{args: args, done: make(chan struct{})}
	p.cmd = exec.Command(binary(t), args...)
	p.cmd.Dir = dir
	p.cmd.Env = flowEnv(tag)
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	p.began = time.Now()
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start flow %s: %v", strings.Join(args, " "), err)
	}
	go func() {
		p.waitErr = p.cmd.Wait()
		p.ended = time.Now()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.killGroup()
		<-p.done
	})
	return p
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

// killGroup sends SIGKILL to the whole process group of p (a no-op once it is gone).
func (p *proc) killGroup() {
	_ = syscall.Kill(-p.pid(), syscall.SIGKILL)
}

// signal sends sig to the flow process alone, as a terminal's Ctrl-C reaches it.
func (p *proc) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := syscall.Kill(p.pid(), sig); err != nil {
		t.Fatalf("signal %v to flow (pid %d): %v", sig, p.pid(), err)
	}
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// wait waits up to timeout for p to exit and reports whether it did.
func (p *proc) wait(timeout time.Duration) bool {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-p.done:
		return true
	case <-timer.C:
		return false
	}
}

// code is the exit code of an exited p, or -1 if a signal ended it.
func (p *proc) code() int { return p.cmd.ProcessState.ExitCode() }

// signaled reports whether a signal ended the exited p.
func (p *proc) signaled() bool {
	ws, ok := p.cmd.ProcessState.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled()
}

// describe is p's command line and output for a failure message. The lines that say
// what failed come first: a long output may be cut in the middle where CI prints it.
func (p *proc) describe() string {
	out, errOut := p.stdout.String(), p.stderr.String()
	return fmt.Sprintf("flow %s\n%s--- stdout ---\n%s--- stderr ---\n%s", strings.Join(p.args, " "), failureLines(out+errOut), tail(out, 60), errOut)
}

// tail is out's last n lines, after a line that says how many were left out: a lab's
// whole output would push what follows a failure (its component logs) out of CI's view.
func tail(out string, n int) string {
	lines := strings.SplitAfter(out, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	if len(lines) <= n {
		return out
	}
	return fmt.Sprintf("[%d earlier lines left out]\n%s", len(lines)-n, strings.Join(lines[len(lines)-n:], ""))
}

// failureLines are the lines of out that report a failure, under a heading, or "" when
// there are none.
func failureLines(out string) string {
	var b strings.Builder
	for _, line := range strings.Split(out, "\n") {
		l := strings.ToLower(line)
		if strings.Contains(l, "failed") || strings.Contains(l, "error") || strings.Contains(l, "skipped") {
			b.WriteString(line + "\n")
		}
	}
	if b.Len() == 0 {
		return ""
	}
	return "--- failures ---\n" + b.String()
}

// result is a finished flow command.
type result struct {
	code           int
	stdout, stderr string
	took           time.Duration
	desc           string
}

// runFlow runs flow to completion (failing the test if it takes longer than timeout).
func runFlow(t *testing.T, tag, dir string, timeout time.Duration, args ...string) result {
	t.Helper()
	p := start(t, tag, dir, args...)
	if !p.wait(timeout) {
		// SIGQUIT makes the Go runtime print every goroutine's stack to stderr,
		// which says where a hung flow is stuck.
		_ = syscall.Kill(p.pid(), syscall.SIGQUIT)
		p.wait(3 * time.Second)
		p.killGroup()
		<-p.done
		t.Fatalf("flow %s did not finish within %s\n%s", strings.Join(args, " "), timeout, p.describe())
	}
	return result{code: p.code(), stdout: p.stdout.String(), stderr: p.stderr.String(),
		took: p.ended.Sub(p.began), desc: p.describe()}
}

// statusDoc is the `flow status --json` contract.
type statusDoc struct {
	RunID  uint64    `json:"run_id"`
	Flow   string    `json:"flow"`
	Status string    `json:"status"`
	Tasks  []taskDoc `json:"tasks"`
	// Outputs are the run's outputs as flow output --json prints them.
	Outputs map[string]json.RawMessage `json:"outputs,omitempty"`
	// Destroys is, for a run of flow destroy, the run it undoes.
	Destroys uint64 `json:"destroys,omitempty"`
	// Plugins are the plugin executables the run used.
	Plugins []pluginDoc `json:"plugins,omitempty"`
}

type pluginDoc struct {
	Name   string   `json:"name"`
	Path   string   `json:"path"`
	Sha256 string   `json:"sha256"`
	Types  []string `json:"types"`
	// Instances are those whose latest attempt ran with this executable.
	Instances []string `json:"instances"`
}

type taskDoc struct {
	Address    string     `json:"address"`
	Status     string     `json:"status"`
	Attempts   int        `json:"attempts"`
	StartedAt  *time.Time `json:"started_at"`
	FinishedAt *time.Time `json:"finished_at"`
	Error      string     `json:"error"`
}

func (d statusDoc) byAddress() map[string]taskDoc {
	m := make(map[string]taskDoc, len(d.Tasks))
	for _, task := range d.Tasks {
		m[task.Address] = task
	}
	return m
}

// decodeStatus parses the output of `flow status --json` strictly: one object with
// exactly the documented fields.
func decodeStatus(out string) (statusDoc, error) {
	var doc statusDoc
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		return doc, fmt.Errorf("invalid status JSON: %w", err)
	}
	if dec.More() {
		return doc, errors.New("invalid status JSON: more than one value")
	}
	if doc.RunID == 0 || doc.Status == "" || doc.Tasks == nil {
		return doc, fmt.Errorf("status JSON lacks run_id, status or tasks: %+v", doc)
	}
	return doc, nil
}

// status runs `flow status --json` and fails the test unless it exits 0 with a valid
// document.
func status(t *testing.T, tag, dir, state string) statusDoc {
	t.Helper()
	r := runFlow(t, tag, dir, 10*time.Second, "status", "--json", "--state", state)
	if r.code != 0 {
		t.Fatalf("flow status exited %d\n%s", r.code, r.desc)
	}
	doc, err := decodeStatus(r.stdout)
	if err != nil {
		t.Fatalf("%v\n%s", err, r.desc)
	}
	return doc
}

// waitStatus polls `flow status --json` until ok accepts the document.
func waitStatus(t *testing.T, tag, dir, state string, timeout time.Duration, what string, ok func(statusDoc) bool) statusDoc {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var last result
	for time.Now().Before(deadline) {
		last = runFlow(t, tag, dir, 10*time.Second, "status", "--json", "--state", state)
		if last.code == 0 {
			doc, err := decodeStatus(last.stdout)
			if err != nil {
				t.Fatalf("%v\n%s", err, last.desc)
			}
			if ok(doc) {
				return doc
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("flow status never showed %s within %s; last answer:\n%s", what, timeout, last.desc)
	return statusDoc{}
}

// tagged lists the live (not zombie) processes whose environment carries tag, with
// their process groups.
func tagged(tag string) map[int]int {
	needle := []byte("\x00FLOW_E2E_TAG=" + tag + "\x00")
	found := map[int]int{}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return found
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil || !bytes.Contains(append([]byte{0}, env...), needle) {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		f := bytes.Fields(stat[i+1:])
		if len(f) < 3 || f[0][0] == 'Z' || f[0][0] == 'X' {
			continue
		}
		pgid, err := strconv.Atoi(string(f[2]))
		if err != nil {
			continue
		}
		found[pid] = pgid
	}
	return found
}

// killTagged SIGKILLs every process carrying tag, and its process group, and waits
// until they are gone. It returns how many it found.
func killTagged(tag string) int {
	seen := map[int]bool{}
	deadline := time.Now().Add(5 * time.Second)
	for {
		procs := tagged(tag)
		if len(procs) == 0 || time.Now().After(deadline) {
			return len(seen)
		}
		for pid, pgid := range procs {
			seen[pid] = true
			if pgid > 1 && pgid != syscall.Getpgrp() {
				_ = syscall.Kill(-pgid, syscall.SIGKILL)
			}
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// readFile returns the contents of path, "" if it does not exist.
func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return string(b)
}

// clearLabsFlow deletes whatever an earlier, failed test run left of the labs: they share
// member names, ports and profiles, and a leftover would break the next lab. The labs
// themselves are removed by flow destroy from their own state (destroyLab).
const clearLabsFlow = `task "lxd_delete" "labs" {
  instances = ["member1", "member2", "member3", "karmada-host", "lab-registry", "lab-upstream"]
  profiles  = ["flow-lab", "flow-member", "flow-karmada-host", "flow-lab-registry", "flow-karmada-lab"]
  images    = ["flow-lab-busybox"]
  force     = true
}
`

// clearLabs runs clearLabsFlow, as a user cleaning up by hand would.
func clearLabs(t *testing.T, tag, root string) {
	t.Helper()
	dir := t.TempDir()
	file := filepath.Join(dir, "clear-labs.hcl")
	if err := os.WriteFile(file, []byte(clearLabsFlow), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := runFlow(t, tag, root, 3*time.Minute, "run", file, "--state", filepath.Join(dir, "clear.db")); r.code != 0 {
		t.Fatalf("clearing leftover labs exited %d\n%s", r.code, r.desc)
	}
}

// destroyLab undoes the latest run of state with flow destroy, which reads the flow and
// the variables that run recorded: nothing is passed again.
func destroyLab(t *testing.T, tag, root, state string) {
	t.Helper()
	if r := runFlow(t, tag, root, 10*time.Minute, "destroy", "--state", state, "--auto-approve"); r.code != 0 {
		t.Fatalf("flow destroy exited %d\n%s", r.code, r.desc)
	}
}
