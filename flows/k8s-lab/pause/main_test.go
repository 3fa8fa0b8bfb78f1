package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flowdev/flow/internal/ci"
)

// buildPause builds the command as the lab builds it: static.
func buildPause(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "pause")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

func TestPause(t *testing.T) {
	bin := buildPause(t)

	t.Run("version", func(t *testing.T) {
		out, err := exec.Command(bin, "-v").Output()
		if err != nil || !strings.Contains(string(out), "3.6") {
			t.Errorf("-v: %q, %v", out, err)
		}
	})
	t.Run("unknown argument", func(t *testing.T) {
		var ee *exec.ExitError
		if err := exec.Command(bin, "--serve").Run(); !errors.As(err, &ee) || ee.ExitCode() != 2 {
			t.Errorf("--serve: %v, want exit code 2", err)
		}
	})
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run("exits 0 on "+sig.String(), func(t *testing.T) {
			cmd := exec.Command(bin)
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case err := <-done:
				t.Fatalf("exited before a signal: %v", err)
			case <-time.After(200 * time.Millisecond):
			}
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			if err := <-done; err != nil {
				t.Errorf("after %s: %v, want exit 0", sig, err)
			}
		})
	}
}

// As PID 1 of a PID namespace, pause inherits the orphans of that namespace
// and must reap them: a process started in the namespace by nsenter, whose
// parent exits at once, leaves no zombie behind.
func TestPauseReapsOrphansAsPID1(t *testing.T) {
	if os.Geteuid() != 0 {
		if ci.Enabled() {
			t.Fatal("a PID namespace needs root; CI runs as root")
		}
		t.Skip("a PID namespace needs root")
	}
	nsenter, err := exec.LookPath("nsenter")
	if err != nil {
		t.Fatalf("nsenter (util-linux): %v", err)
	}
	bin := buildPause(t)
	cmd := exec.Command(bin)
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWPID}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })

	// Two orphans that exit a moment after their parent.
	orphan := exec.Command(nsenter, "-t", strconv.Itoa(pid), "-p", "sh", "-c", "sleep 0.2 & sleep 0.2 & exit 0")
	if out, err := orphan.CombinedOutput(); err != nil {
		t.Fatalf("nsenter: %v\n%s", err, out)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		children, zombies := childrenOf(t, pid)
		if children == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("pause (pid %d) still has %d children, %d of them zombies", pid, children, zombies)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("after SIGTERM: %v, want exit 0", err)
	}
}

// childrenOf counts the processes whose parent is pid, and the zombies among them.
func childrenOf(t *testing.T, pid int) (children, zombies int) {
	t.Helper()
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, p := range stats {
		b, err := os.ReadFile(p)
		if err != nil {
			continue // exited meanwhile
		}
		// pid (comm) state ppid ...: comm may hold spaces, so split after the last ')'.
		i := bytes.LastIndexByte(b, ')')
		fields := strings.Fields(string(b[i+1:]))
		if len(fields) < 2 || fields[1] != strconv.Itoa(pid) {
			continue
		}
		children++
		if fields[0] == "Z" {
			zombies++
		}
	}
	return children, zombies
}
