package exec

import (
	"github.com/flowdev/flow/tasks/internal/command"

	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flowdev/flow/tasks"
)

func setKillGrace(t *testing.T, d time.Duration) {
	old := command.KillGrace
	command.KillGrace = d
	t.Cleanup(func() { command.KillGrace = old })
}

// readPID waits for the script to write a pid to path.
func readPID(t *testing.T, path string) int {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		b, err := os.ReadFile(path)
		if s := strings.TrimSpace(string(b)); err == nil && strings.HasSuffix(string(b), "\n") {
			pid, err := strconv.Atoi(s)
			if err != nil {
				t.Fatalf("pid file %q: %v", s, err)
			}
			t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
			return pid
		}
	}
	t.Fatal("script did not write its pid file")
	return 0
}

// processGone reports whether pid has exited (an unreaped zombie counts as gone: this
// sandbox's init may not reap orphans).
func processGone(pid int) bool {
	if errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
		return true
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return os.IsNotExist(err)
	}
	i := bytes.LastIndexByte(stat, ')')
	return i >= 0 && i+2 < len(stat) && stat[i+2] == 'Z'
}

func waitGone(t *testing.T, pid int) {
	t.Helper()
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if processGone(pid) {
			return
		}
	}
	t.Errorf("process %d still running", pid)
}

func TestRunCancel(t *testing.T) {
	tests := []struct {
		name    string
		script  string // writes a pid to $PIDFILE, then waits
		grace   time.Duration
		timeout bool // deadline instead of cancel
		minTime time.Duration
		maxTime time.Duration
	}{
		{
			name:    "SIGTERM ends it before the grace period",
			script:  `sleep 30 & echo $! > "$PIDFILE"; wait`,
			grace:   10 * time.Second,
			maxTime: 2 * time.Second,
		},
		{
			name:    "deadline",
			script:  `sleep 30 & echo $! > "$PIDFILE"; wait`,
			grace:   10 * time.Second,
			timeout: true,
			maxTime: 2 * time.Second,
		},
		{
			name:    "SIGTERM ignored by the group, SIGKILL after grace",
			script:  `trap '' TERM; sleep 30 & echo $! > "$PIDFILE"; wait`,
			grace:   300 * time.Millisecond,
			minTime: 300 * time.Millisecond,
			maxTime: 2 * time.Second,
		},
		// The subshell writes its own pid ($PPID of the sh it starts), and only once
		// its trap is set: a pid file written by the leader ($!) could let the test
		// cancel before the trap, and an early SIGTERM kill the subshell.
		{
			name:    "leader exits, grandchild ignores SIGTERM and holds the pipes",
			script:  `(trap '' TERM; sh -c 'echo $PPID' > "$PIDFILE"; sleep 30; echo late) & wait`,
			grace:   500 * time.Millisecond,
			minTime: 500 * time.Millisecond,
			maxTime: 2 * time.Second,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			setKillGrace(t, tt.grace)
			paths(t, func(t *testing.T, as func(*testing.T, *Exec) tasks.Task) {
				pidFile := filepath.Join(t.TempDir(), "pid")
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				want := context.Canceled
				if tt.timeout {
					ctx, cancel = context.WithTimeout(ctx, 300*time.Millisecond)
					defer cancel()
					want = context.DeadlineExceeded
				}
				e := &Exec{Script: tt.script, Env: map[string]string{"PIDFILE": pidFile}}
				type result struct {
					out tasks.Outputs
					err error
				}
				done := make(chan result, 1)
				go func() {
					out, err := as(t, e).Run(ctx, testEnv(newSyncBuffer(), newSyncBuffer()))
					done <- result{out, err}
				}()
				pid := readPID(t, pidFile)
				start := time.Now()
				if !tt.timeout {
					cancel()
				}
				var r result
				select {
				case r = <-done:
				case <-time.After(10 * time.Second):
					t.Fatal("Run did not return within 10s of cancellation")
				}
				took := time.Since(start)
				if took < tt.minTime || took > tt.maxTime {
					t.Errorf("Run returned %v after cancellation, want between %v and %v", took, tt.minTime, tt.maxTime)
				}
				if !errors.Is(r.err, want) {
					t.Errorf("Run error = %v, want it to wrap %v", r.err, want)
				}
				if wantMsg := "script stopped: " + want.Error(); r.err == nil || r.err.Error() != wantMsg {
					t.Errorf("Run error = %v, want %q", r.err, wantMsg)
				}
				if r.out == nil {
					t.Error("no outputs returned with the cancellation error")
				} else if code := outCode(t, r.out); code == 0 {
					t.Error("exit_code = 0 for a stopped command")
				}
				waitGone(t, pid)
			})
		})
	}
}

// A process left running after a normal exit may hold the pipes; Run still returns.
func TestRunLeftoverHoldsPipes(t *testing.T) {
	paths(t, func(t *testing.T, as func(*testing.T, *Exec) tasks.Task) {
		pidFile := filepath.Join(t.TempDir(), "pid")
		e := &Exec{Script: `sleep 30 & echo $! > "$PIDFILE"; echo hi`, Env: map[string]string{"PIDFILE": pidFile}}
		start := time.Now()
		out, err := as(t, e).Run(context.Background(), testEnv(newSyncBuffer(), newSyncBuffer()))
		if took := time.Since(start); took > command.PipeDrain+2*time.Second {
			t.Errorf("Run took %v, want about %v", took, command.PipeDrain)
		}
		pid := readPID(t, pidFile)
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		if got := outString(t, out, "stdout"); got != "hi" {
			t.Errorf("stdout = %q, want %q", got, "hi")
		}
		_ = syscall.Kill(pid, syscall.SIGKILL)
	})
}

func TestRunAlreadyCancelled(t *testing.T) {
	paths(t, func(t *testing.T, as func(*testing.T, *Exec) tasks.Task) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		dir := t.TempDir()
		marker := filepath.Join(dir, "ran")
		out, err := as(t, &Exec{Command: []string{"touch", marker}}).Run(ctx, &tasks.Env{})
		if !errors.Is(err, context.Canceled) || err.Error() != `command "touch" not started: context canceled` {
			t.Errorf("Run error = %v, want %q", err, `command "touch" not started: context canceled`)
		}
		if out != nil {
			t.Errorf("outputs = %v, want nil", out)
		}
		if _, err := os.Stat(marker); !os.IsNotExist(err) {
			t.Error("command ran despite the cancelled context")
		}
	})
}
