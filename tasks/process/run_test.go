package process

import (
	"github.com/flowdev/flow/tasks"

	"bufio"
	"context"
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	osexec "os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// busybox httpd serves a real HTTP endpoint from a process the task starts.
func TestStartReadyPresentStop(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "index.html"), []byte("ok\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	p := newProcess(t, "busybox", "httpd", "-f", "-p", addr, "-h", root)
	p.ReadyURL = "http://" + addr + "/"

	out, printed, err := run(context.Background(), t, p)
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, printed)
	}
	pid := outPID(t, out)
	if got := out["log_file"].AsString(); got != p.LogFile {
		t.Errorf("log_file = %q, want %q", got, p.LogFile)
	}
	for _, want := range []string{
		`started process "busybox" (pid ` + strconv.Itoa(pid) + `), logging to ` + p.LogFile,
		"waiting for http://" + addr + "/ (up to 1m0s)",
		`process "busybox" (pid ` + strconv.Itoa(pid) + `) ready after `,
	} {
		if !strings.Contains(printed, want) {
			t.Errorf("printed %q, want it to contain %q", printed, want)
		}
	}
	rec, ok, err := readRecord(p.PIDFile)
	if err != nil || !ok || rec.PID != pid || !slices.Equal(rec.Argv, p.Command) {
		t.Fatalf("pid file: %+v, %v, %v; want pid %d and argv %s", rec, ok, err, pid, argvString(p.Command))
	}
	if first, _, _ := strings.Cut(readFile(t, p.PIDFile), "\n"); first != strconv.Itoa(pid) {
		t.Errorf("pid file's first line = %q, want the pid", first)
	}
	checkDetached(t, pid)

	// A second run finds it.
	out, printed, err = run(context.Background(), t, p)
	if err != nil {
		t.Fatalf("second Run: %v", err)
	}
	if got := outPID(t, out); got != pid {
		t.Errorf("second run: pid = %d, want %d", got, pid)
	}
	if want := `process "busybox" (pid ` + strconv.Itoa(pid) + `) already present`; !strings.Contains(printed, want) || strings.Contains(printed, "started") {
		t.Errorf("second run printed %q, want %q and no start", printed, want)
	}

	stop := &ProcessStop{PIDFile: p.PIDFile}
	out, printed, err = run(context.Background(), t, stop)
	if err != nil || out["stopped"].True() != true {
		t.Fatalf("process_stop: %v, %v", out, err)
	}
	if !strings.Contains(printed, "stopping process \"busybox\" (pid "+strconv.Itoa(pid)+") with SIGTERM (up to 30s)") {
		t.Errorf("process_stop printed %q", printed)
	}
	waitDead(t, pid)
	if _, err := os.Stat(p.PIDFile); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("pid file still there after process_stop: %v", err)
	}
}

// checkDetached checks that pid leads a session of its own and reads /dev/null.
func checkDetached(t *testing.T, pid int) {
	t.Helper()
	stat := readFile(t, "/proc/"+strconv.Itoa(pid)+"/stat")
	f := strings.Fields(stat[strings.LastIndexByte(stat, ')')+1:])
	if f[3] != strconv.Itoa(pid) { // field 6, the session
		t.Errorf("session of %d = %s, want its own", pid, f[3])
	}
	if in, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/fd/0"); err != nil || in != "/dev/null" {
		t.Errorf("stdin of %d = %q, %v; want /dev/null", pid, in, err)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Cancelling the task while it waits leaves the process running; a later run with the
// endpoint up adopts it.
func TestCancelWhileWaitingKeepsProcess(t *testing.T) {
	addr := freeAddr(t)
	p := newProcess(t, "sleep", "30")
	p.ReadyTCP = addr
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { _, _, err := run(ctx, t, p); done <- err }()
	var rec record
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		var ok bool
		if rec, ok, _ = readRecord(p.PIDFile); ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no pid file within 5s")
		}
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) || err.Error() != "wait for tcp://"+addr+": context canceled" {
			t.Errorf("Run error = %v, want the wait cancelled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return within 5s of cancellation")
	}
	time.Sleep(100 * time.Millisecond)
	if !alive(rec.PID) {
		t.Fatal("process died with the task's context")
	}

	l := listenOn(t, addr)
	defer l.Close()
	out, printed, err := run(context.Background(), t, p)
	if err != nil || outPID(t, out) != rec.PID || !strings.Contains(printed, "already present") || !strings.Contains(printed, "ready after") {
		t.Errorf("re-run: %v, %v, printed %q; want pid %d already present and ready", out, err, printed, rec.PID)
	}
}

// A run cancelled before it waits (here: the process already present) says it was
// cancelled, every time: the expired wait must not pass for ready_timeout.
func TestCancelledBeforeWait(t *testing.T) {
	p := newProcess(t, "sleep", "30")
	p.ReadyTCP = freeAddr(t)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, _, err := run(ctx, t, p); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("first Run error = %v, want the wait cut short", err)
	}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for i := range 20 {
		_, printed, err := run(cancelled, t, p)
		if !strings.Contains(printed, "already present") {
			t.Fatalf("run %d printed %q, want the process already present", i, printed)
		}
		if want := "wait for tcp://" + p.ReadyTCP + ": context canceled"; err == nil || err.Error() != want {
			t.Fatalf("run %d: Run error = %v, want %q", i, err, want)
		}
	}
}

// The process outlives a flow that is killed with SIGKILL.
func TestSurvivesKilledFlow(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "p.pid")
	t.Cleanup(func() { killRecorded(pidFile) })
	flow := osexec.Command(os.Args[0], "-test.run=^$")
	flow.Env = append(os.Environ(), "FLOW_PROCESS_TEST_PID_FILE="+pidFile)
	stdout, err := flow.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := flow.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(stdout).ReadString('\n')
	if line != "started\n" {
		_ = flow.Process.Kill()
		t.Fatalf("stand-in flow said %q, want started", line)
	}
	_ = flow.Process.Kill()
	_ = flow.Wait()
	rec, _, err := readRecord(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	if info, err := inspect(rec.PID); err != nil || !rec.matches(info) {
		t.Fatalf("process %d did not outlive the killed flow: %+v, %v", rec.PID, info, err)
	}
	out, _, err := run(context.Background(), t, &ProcessStop{PIDFile: pidFile})
	if err != nil || !out["stopped"].True() {
		t.Errorf("process_stop: %v, %v", out, err)
	}
	waitDead(t, rec.PID)
}

func TestEnvAndDir(t *testing.T) {
	dir := t.TempDir()
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	p := newProcess(t, "sh", "-c", `echo "FOO=$FOO"; pwd -P; exec sleep 30`)
	p.Env = map[string]string{"FOO": "bar"}
	p.Dir = dir
	if _, printed, err := run(context.Background(), t, p); err != nil {
		t.Fatalf("Run: %v\n%s", err, printed)
	}
	want := "FOO=bar\n" + real + "\n"
	for deadline := time.Now().Add(5 * time.Second); !strings.Contains(readLog(t, p), want) && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if log := readLog(t, p); !strings.HasPrefix(log, "--- started by flow at ") || !strings.HasSuffix(log, "---\n"+want) {
		t.Errorf("log = %q, want the start marker, then %q", log, want)
	}
	// The wrapper exec'd sleep, changing the command line; a re-run still finds it.
	if _, printed, err := run(context.Background(), t, p); err != nil || !strings.Contains(printed, "already present") {
		t.Errorf("re-run: %v, printed %q; want already present", err, printed)
	}
}

func TestDifferentCommand(t *testing.T) {
	p := newProcess(t, "sleep", "30")
	out, _, err := run(context.Background(), t, p)
	if err != nil {
		t.Fatal(err)
	}
	first := outPID(t, out)

	p.Command = []string{"sleep", "31"}
	_, _, err = run(context.Background(), t, p)
	want := `start "sleep": pid file ` + p.PIDFile + ` names process "sleep" (pid ` + strconv.Itoa(first) +
		`) running ["sleep", "30"], not ["sleep", "31"]; set recreate = true to replace it`
	if err == nil || err.Error() != want {
		t.Fatalf("Run error = %v, want %q", err, want)
	}
	if !alive(first) {
		t.Fatal("a refused run stopped the process")
	}

	p.Recreate = true
	out, printed, err := run(context.Background(), t, p)
	if err != nil {
		t.Fatalf("recreate: %v", err)
	}
	second := outPID(t, out)
	waitDead(t, first)
	if second == first || !alive(second) {
		t.Errorf("recreate: pid %d (first %d), alive %v", second, first, alive(second))
	}
	for _, w := range []string{`runs ["sleep", "30"], not ["sleep", "31"]; recreating it`, "with SIGTERM", "stopped after", "started process"} {
		if !strings.Contains(printed, w) {
			t.Errorf("recreate printed %q, want %q", printed, w)
		}
	}
	if rec, _, _ := readRecord(p.PIDFile); rec.PID != second || rec.Argv[1] != "31" {
		t.Errorf("pid file after recreate = %+v", rec)
	}
}

// A pid file whose process is gone, or whose pid another process now has, is replaced,
// and that other process is left alone.
func TestStalePIDFile(t *testing.T) {
	other := spawn(t, "sleep", "60")
	tests := []struct {
		name string
		rec  func(t *testing.T) record
	}{
		{"dead pid", func(t *testing.T) record {
			pid := spawn(t, "sleep", "30")
			rec := recordOf(t, pid)
			_ = syscallKill(pid)
			waitDead(t, pid)
			return rec
		}},
		{"pid reused", func(t *testing.T) record {
			rec := recordOf(t, other)
			rec.Argv = []string{"sleep", "30"}
			rec.Start-- // an earlier process that had this pid
			return rec
		}},
		{"pid reused by the same command", func(t *testing.T) record {
			rec := recordOf(t, other)
			rec.Start--
			return rec
		}},
		{"pid and start time of another boot", func(t *testing.T) record {
			rec := recordOf(t, other)
			rec.Argv = []string{"sleep", "30"}
			rec.BootID = "another boot"
			return rec
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newProcess(t, "sleep", "30")
			stale := tt.rec(t)
			if err := writeRecord(p.PIDFile, stale); err != nil {
				t.Fatal(err)
			}
			out, printed, err := run(context.Background(), t, p)
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if want := "pid file " + p.PIDFile + " is stale: process \"sleep\" (pid " + strconv.Itoa(stale.PID) + ") no longer runs; replacing it"; !strings.Contains(printed, want) {
				t.Errorf("printed %q, want %q", printed, want)
			}
			if pid := outPID(t, out); pid == stale.PID || !alive(pid) {
				t.Errorf("pid %d: want a new running process", pid)
			}
			if !alive(other) {
				t.Fatal("the process that reuses the pid was killed")
			}
		})
	}
}

func TestExitBeforeReady(t *testing.T) {
	p := newProcess(t, "sh", "-c", `for i in $(seq 1 30); do echo line $i; done; echo fatal: bad flag >&2; exit 3`)
	p.ReadyTCP = freeAddr(t)
	if err := os.MkdirAll(filepath.Dir(p.LogFile), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p.LogFile, []byte("output of an earlier run\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, err := run(context.Background(), t, p)
	if err == nil {
		t.Fatal("Run succeeded")
	}
	msg := err.Error()
	wantStart := `process "sh" (pid `
	wantRest := ") exited with code 3 before it was ready; last lines of " + p.LogFile + ":\n  line 12\n"
	if !strings.HasPrefix(msg, wantStart) || !strings.Contains(msg, wantRest) || !strings.HasSuffix(msg, "\n  line 30\n  fatal: bad flag") {
		t.Errorf("error = %q, want the exit and the last 20 lines", msg)
	}
	if strings.Contains(msg, "line 11\n") || strings.Contains(msg, "earlier run") {
		t.Errorf("error = %q, shows more than this start's last 20 lines", msg)
	}
	if !strings.HasPrefix(readLog(t, p), "output of an earlier run\n--- started by flow") {
		t.Errorf("log was not appended to: %q", readLog(t, p))
	}
}

func TestExitBeforeReadySilently(t *testing.T) {
	p := newProcess(t, "true")
	p.ReadyTCP = freeAddr(t)
	_, _, err := run(context.Background(), t, p)
	if err == nil || !strings.HasSuffix(err.Error(), ") exited with code 0 before it was ready; it logged nothing to "+p.LogFile) {
		t.Errorf("error = %v", err)
	}
}

func TestNotReadyInTime(t *testing.T) {
	addr := freeAddr(t)
	p := newProcess(t, "sh", "-c", "echo starting; exec sleep 30")
	p.ReadyTCP = addr
	p.ReadyTimeout = "1s"
	_, printed, err := run(context.Background(), t, p)
	if err == nil {
		t.Fatal("Run succeeded")
	}
	rec, _, _ := readRecord(p.PIDFile)
	want := rec.label() + " not ready after 1s (last: error: connect: connection refused); it keeps running; last lines of " + p.LogFile + ":\n  starting"
	if err.Error() != want {
		t.Errorf("error = %q, want %q", err, want)
	}
	if !strings.Contains(printed, "still waiting for tcp://"+addr+" (") || !strings.Contains(printed, ", last: error: connect: connection refused)") {
		t.Errorf("printed %q, want progress lines", printed)
	}
	if !alive(rec.PID) {
		t.Error("process stopped after the timeout, want it left running")
	}
}

func TestReadyURL(t *testing.T) {
	status := func(code int) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if code/100 == 3 {
				w.Header().Set("Location", "/elsewhere")
			}
			w.WriteHeader(code)
		}
	}
	tests := []struct {
		name     string
		tls      bool
		handler  http.HandlerFunc
		insecure bool
		timeout  tasks.Duration
		wantErr  string // in the error; "" means ready
	}{
		{name: "200", handler: status(200)},
		{name: "204", handler: status(204)},
		{name: "redirect not followed", handler: status(302)},
		{name: "503", handler: status(503), timeout: "300ms", wantErr: "(last: status 503)"},
		{name: "404", handler: status(404), timeout: "300ms", wantErr: "(last: status 404)"},
		{name: "self-signed, insecure", tls: true, handler: status(200), insecure: true},
		{name: "self-signed, verified", tls: true, handler: status(200), timeout: "2s", wantErr: "certificate signed by unknown authority"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewUnstartedServer(tt.handler)
			srv.Config.ErrorLog = log.New(io.Discard, "", 0) // refused handshakes
			if tt.tls {
				srv.StartTLS()
			} else {
				srv.Start()
			}
			defer srv.Close()
			p := newProcess(t, "sleep", "30")
			p.ReadyURL, p.Insecure, p.ReadyTimeout = srv.URL+"/readyz", tt.insecure, tt.timeout
			_, printed, err := run(context.Background(), t, p)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("Run: %v\n%s", err, printed)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("Run error = %v, want %q", err, tt.wantErr)
			}
		})
	}
}

func TestStartErrors(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nope")
	tests := []struct {
		name    string
		argv    []string
		dir     string
		wantErr string
	}{
		{name: "missing program", argv: []string{"flow-no-such-program"}, wantErr: `start "flow-no-such-program": executable file not found in $PATH`},
		{name: "missing dir", argv: []string{"sleep", "1"}, dir: missing, wantErr: `start "sleep": dir ` + missing + `: no such file or directory`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newProcess(t, tt.argv...)
			p.Dir = tt.dir
			_, _, err := run(context.Background(), t, p)
			if err == nil || err.Error() != tt.wantErr {
				t.Fatalf("Run error = %v, want %q", err, tt.wantErr)
			}
			if _, err := os.Stat(p.PIDFile); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("pid file written for a process that never started: %v", err)
			}
		})
	}
}

func TestForeignPIDFile(t *testing.T) {
	p := newProcess(t, "sleep", "30")
	if err := os.MkdirAll(filepath.Dir(p.PIDFile), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p.PIDFile, []byte("1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, err := run(context.Background(), t, p)
	want := `start "sleep": pid file ` + p.PIDFile + `: not written by flow: the second line must record argv and start_ticks`
	if err == nil || err.Error() != want {
		t.Errorf("Run error = %v, want %q", err, want)
	}
}

// A flow killed between starting the process and writing its pid file closes the
// gate without releasing it: the program never runs, so no unrecorded process is
// left holding ports that a resumed run needs.
func TestGateClosedWithoutReleaseRunsNothing(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "ran")
	p := &Process{Command: []string{"touch", marker}}
	program, err := p.resolveProgram()
	if err != nil {
		t.Fatal(err)
	}
	gate, release, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	log, err := os.Create(filepath.Join(dir, "log"))
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	cmd := p.command(log, program, gate)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	gate.Close()
	release.Close() // as the kernel does when flow dies
	_ = cmd.Wait()
	if _, err := os.Stat(marker); !os.IsNotExist(err) {
		t.Errorf("the program ran although the gate was never released (stat: %v)", err)
	}
}
