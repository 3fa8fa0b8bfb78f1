package process

import (
	"github.com/flowdev/flow/tasks"

	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flowdev/flow/tasks/taskstest"
)

func syscallKill(pid int) error { return syscall.Kill(pid, syscall.SIGKILL) }

// ignoresTERM is a command that ignores SIGTERM once it logged "trapped".
var ignoresTERM = []string{"sh", "-c", "trap '' TERM; echo trapped; while :; do sleep 0.05; done"}

// started runs the process task for argv and returns the pid file and the pid. For
// ignoresTERM it waits until the trap is set.
func started(t *testing.T, argv ...string) (string, int) {
	t.Helper()
	p := newProcess(t, argv...)
	out, _, err := run(context.Background(), t, p)
	if err != nil {
		t.Fatalf("start %s: %v", argvString(argv), err)
	}
	if argvString(argv) == argvString(ignoresTERM) {
		for deadline := time.Now().Add(5 * time.Second); !strings.Contains(readLog(t, p), "trapped\n"); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("the shell did not set its trap within 5s")
			}
		}
	}
	return p.PIDFile, outPID(t, out)
}

func TestStop(t *testing.T) {
	tests := []struct {
		name        string
		argv        []string
		signal      string
		timeout     tasks.Duration
		minTime     time.Duration
		wantPrinted []string
	}{
		{name: "TERM", argv: []string{"sleep", "30"}, wantPrinted: []string{"with SIGTERM (up to 30s)", "stopped after"}},
		{name: "INT", argv: []string{"sleep", "30"}, signal: "SIGINT", wantPrinted: []string{"with SIGINT", "stopped after"}},
		{
			name: "TERM ignored, killed after stop_timeout", argv: ignoresTERM,
			timeout: "300ms", minTime: 300 * time.Millisecond,
			wantPrinted: []string{"with SIGTERM (up to 300ms)", "still runs after 300ms; sending SIGKILL", "killed after"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pidFile, pid := started(t, tt.argv...)
			start := time.Now()
			out, printed, err := run(context.Background(), t, &ProcessStop{PIDFile: pidFile, Signal: tt.signal, StopTimeout: tt.timeout})
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if took := time.Since(start); took < tt.minTime || took > tt.minTime+3*time.Second {
				t.Errorf("stop took %v, want from %v to %v", took, tt.minTime, tt.minTime+3*time.Second)
			}
			if !out["stopped"].True() {
				t.Error("stopped = false, want true")
			}
			for _, w := range tt.wantPrinted {
				if !strings.Contains(printed, w) {
					t.Errorf("printed %q, want %q", printed, w)
				}
			}
			if alive(pid) {
				t.Error("process still runs")
			}
			if _, err := os.Stat(pidFile); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("pid file left behind: %v", err)
			}
		})
	}
}

// The group is signalled: a wrapper's children stop with it.
func TestStopGroup(t *testing.T) {
	dir := t.TempDir()
	childFile := filepath.Join(dir, "child")
	pidFile, _ := started(t, "sh", "-c", `sleep 30 & echo $! > "$0"; wait`, childFile)
	var child int
	for deadline := time.Now().Add(5 * time.Second); child == 0 && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		b, _ := os.ReadFile(childFile)
		child, _ = strconv.Atoi(strings.TrimSpace(string(b)))
	}
	if child == 0 {
		t.Fatal("wrapper wrote no child pid")
	}
	if _, _, err := run(context.Background(), t, &ProcessStop{PIDFile: pidFile}); err != nil {
		t.Fatal(err)
	}
	waitDead(t, child)
}

func TestAlreadyStopped(t *testing.T) {
	other := spawn(t, "sleep", "60")
	tests := []struct {
		name      string
		pidFile   func(t *testing.T, path string)
		wantPrint string
	}{
		{name: "no pid file", pidFile: func(*testing.T, string) {}, wantPrint: "already stopped (no pid file)"},
		{name: "dead pid", pidFile: func(t *testing.T, path string) {
			pid := spawn(t, "sleep", "30")
			rec := recordOf(t, pid)
			_ = syscallKill(pid)
			waitDead(t, pid)
			mustWrite(t, path, rec)
		}, wantPrint: "already stopped"},
		{name: "pid reused", pidFile: func(t *testing.T, path string) {
			rec := recordOf(t, other)
			rec.Argv = []string{"karmada-apiserver"}
			rec.Start--
			mustWrite(t, path, rec)
		}, wantPrint: `process "karmada-apiserver" (pid ` + strconv.Itoa(other) + `) already stopped`},
		{name: "pid reused by the same command", pidFile: func(t *testing.T, path string) {
			rec := recordOf(t, other)
			rec.Start--
			mustWrite(t, path, rec)
		}, wantPrint: "already stopped"},
		{name: "pid and start time of another boot", pidFile: func(t *testing.T, path string) {
			rec := recordOf(t, other)
			rec.BootID = "another boot"
			mustWrite(t, path, rec)
		}, wantPrint: "already stopped"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "p.pid")
			tt.pidFile(t, path)
			out, printed, err := run(context.Background(), t, &ProcessStop{PIDFile: path})
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if out["stopped"].True() {
				t.Error("stopped = true, want false")
			}
			if !strings.Contains(printed, tt.wantPrint) {
				t.Errorf("printed %q, want %q", printed, tt.wantPrint)
			}
			if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("pid file left behind: %v", err)
			}
			if !alive(other) {
				t.Fatal("a process that reuses the pid was signalled")
			}
		})
	}
}

func TestStopForeignPIDFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p.pid")
	if err := os.WriteFile(path, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, err := run(context.Background(), t, &ProcessStop{PIDFile: path})
	if err == nil || !strings.Contains(err.Error(), "not written by flow") {
		t.Errorf("Run error = %v, want a refusal", err)
	}
}

func TestStopCancelled(t *testing.T) {
	pidFile, pid := started(t, ignoresTERM...)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	start := time.Now()
	_, _, err := run(ctx, t, &ProcessStop{PIDFile: pidFile})
	if !errors.Is(err, context.Canceled) || time.Since(start) > 2*time.Second {
		t.Errorf("Run = %v after %v, want cancelled promptly", err, time.Since(start))
	}
	if !alive(pid) {
		t.Error("process gone, though it ignores SIGTERM and the stop was cancelled before SIGKILL")
	}
	if _, err := os.Stat(pidFile); err != nil {
		t.Errorf("pid file removed by a cancelled stop: %v", err)
	}
}

func mustWrite(t *testing.T, path string, rec record) {
	t.Helper()
	if err := writeRecord(path, rec); err != nil {
		t.Fatal(err)
	}
}

// TestDestroyStopsTheProcess: flow destroy stops a process task's process as
// process_stop does, and a second destroy finds it already stopped.
func TestDestroyStopsTheProcess(t *testing.T) {
	pidFile, pid := started(t, "sleep", "30")
	p := &Process{Command: []string{"sleep", "30"}, PIDFile: pidFile, LogFile: pidFile + ".log"}
	env, printed := taskstest.NewEnv(t)
	if err := p.Destroy(context.Background(), env, nil); err != nil {
		t.Fatalf("Destroy() = %v\n%s", err, printed)
	}
	if !strings.Contains(printed.String(), "stopped after") || alive(pid) {
		t.Errorf("process %d after Destroy (alive %v); printed:\n%s", pid, alive(pid), printed)
	}
	env, printed = taskstest.NewEnv(t)
	if err := p.Destroy(context.Background(), env, nil); err != nil || !strings.Contains(printed.String(), "already stopped (no pid file)") {
		t.Errorf("second Destroy() = %v; printed:\n%s", err, printed)
	}
}
