package host

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/flowdev/flow/internal/procgroup"
)

func TestSocketOwner(t *testing.T) {
	tests := []struct {
		name string
		pid  int
		ok   bool
	}{
		{"flow-plugins-123-4567", 123, true},
		{"flow-plugins-1-x", 1, true},
		{"flow-plugins-123", 0, false}, // no random part: not a root MkdirTemp made
		{"flow-plugins-abc-1", 0, false},
		{"flow-plugins--1", 0, false},
		{"flow-plugins-0-1", 0, false},
		{"flow-e2e-bin-123-4", 0, false},
		{"plugin-123-4", 0, false},
	}
	for _, tt := range tests {
		pid, ok := socketOwner(tt.name)
		if pid != tt.pid || ok != tt.ok {
			t.Errorf("socketOwner(%q) = %d, %v, want %d, %v", tt.name, pid, ok, tt.pid, tt.ok)
		}
	}
}

// TestSweepSockets: the socket root of a process that is gone (a plugin host SIGKILLed
// with no chance to clean up) is removed; this process's and a live one's stay.
func TestSweepSockets(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	live := startGroup(t, "sleep 30")
	roots := map[int]bool{gone.Process.Pid: false, os.Getpid(): true, live.Process.Pid: true}
	for pid := range roots {
		if err := os.MkdirAll(filepath.Join(tmp, socketPrefix+strconv.Itoa(pid)+"-1", "plugin-2"), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	sweepSockets()
	for pid, kept := range roots {
		_, err := os.Stat(filepath.Join(tmp, socketPrefix+strconv.Itoa(pid)+"-1"))
		if kept != (err == nil) {
			t.Errorf("the root of pid %d: kept %v, want %v", pid, err == nil, kept)
		}
	}
}

// TestGroupKill: when the plugin process alone was killed (as go-plugin kills it),
// its group's kill ends what it started, which would otherwise run on under PID 1.
func TestGroupKill(t *testing.T) {
	cmd := startGroup(t, "sleep 30 & wait")
	g := trackGroup(t, cmd)
	pgid := g.pgid
	member := waitMember(t, pgid)
	_ = cmd.Process.Kill() // the plugin alone
	_ = cmd.Wait()
	if !procgroup.Alive(pgid) {
		t.Fatal("the plugin's sleep died with it: the test cannot show anything")
	}
	g.kill()
	waitGone(t, pgid)
	if g.pgid != 0 {
		t.Errorf("the group is still held after its kill: %+v", g)
	}
	if info, _ := procgroup.Inspect(member); info.Alive {
		t.Errorf("the plugin's sleep (pid %d) still runs", member)
	}
}

// TestKillPlugins: the host's answer to its death signal kills every plugin's group,
// members included, and removes its socket root.
func TestKillPlugins(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	root, err := sockets.acquire()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(root, "plugin-1"), 0o700); err != nil {
		t.Fatal(err)
	}
	sockets.release()
	a, b := startGroup(t, "sleep 30 & wait"), startGroup(t, "trap '' TERM; sleep 30 & wait")
	ga, gb := trackGroup(t, a), trackGroup(t, b)
	waitMember(t, ga.pgid)
	waitMember(t, gb.pgid)
	if left := KillPlugins(); len(left) != 0 {
		t.Errorf("KillPlugins left %v", left)
	}
	waitGone(t, ga.pgid)
	waitGone(t, gb.pgid)
	if _, err := os.Stat(root); !os.IsNotExist(err) {
		t.Errorf("the socket root %s is left: %v", root, err)
	}
	ga.kill()
	gb.kill()
}

// startGroup starts "sh -c script" leading a process group of its own, as a plugin
// process runs.
func startGroup(t *testing.T, script string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); _ = cmd.Wait() })
	return cmd
}

// trackGroup is cmd's group as conn records a plugin's.
func trackGroup(t *testing.T, cmd *exec.Cmd) *group {
	t.Helper()
	info, err := procgroup.Inspect(cmd.Process.Pid)
	if err != nil || !info.Alive {
		t.Fatalf("inspect %d: %+v, %v", cmd.Process.Pid, info, err)
	}
	return &group{pgid: cmd.Process.Pid, start: info.Start, untrack: procgroup.Track(cmd.Process.Pid)}
}

// waitMember waits for a process of group pgid other than its leader and returns it.
func waitMember(t *testing.T, pgid int) int {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		entries, _ := os.ReadDir("/proc")
		for _, e := range entries {
			pid, err := strconv.Atoi(e.Name())
			if err != nil || pid == pgid {
				continue
			}
			if info, err := procgroup.Inspect(pid); err == nil && info.Alive && info.Group == pgid {
				return pid
			}
		}
	}
	t.Fatalf("group %d got no member", pgid)
	return 0
}

func waitGone(t *testing.T, pgid int) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); procgroup.Alive(pgid); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("group %d still runs", pgid)
		}
	}
}
