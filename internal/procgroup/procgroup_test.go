package procgroup

import (
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// startGroup starts "sh -c script" leading a process group of its own.
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

func waitGone(t *testing.T, pgid int) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); Alive(pgid); {
		if time.Now().After(deadline) {
			t.Fatalf("group %d still alive", pgid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestSurvives: the group is a survivor while its leader is the same process, and
// while members outlive a leader that exited; a wrong start time is another process.
func TestSurvives(t *testing.T) {
	cmd := startGroup(t, "sleep 30 & wait")
	pgid := cmd.Process.Pid
	info, err := Inspect(pgid)
	if err != nil || !info.Alive || info.Group != pgid || info.Start == 0 {
		t.Fatalf("Inspect: %+v, %v", info, err)
	}
	if !Survives(pgid, info.Start) {
		t.Error("the running group is no survivor")
	}
	if Survives(pgid, info.Start+1) {
		t.Error("another start time counts as the same process")
	}
	// The leader dies; its sleep lives on in the group.
	waitMember(t, pgid)
	_ = syscall.Kill(pgid, syscall.SIGKILL)
	_ = cmd.Wait()
	if !Survives(pgid, info.Start) {
		t.Error("the group with its leader gone and a member left is no survivor")
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	waitGone(t, pgid)
	if Survives(pgid, info.Start) {
		t.Error("a group that is gone survives")
	}
}

// TestKillTracked: a tracked group is killed, an ended one is not signalled.
func TestKillTracked(t *testing.T) {
	a, b := startGroup(t, "trap '' TERM; sleep 30"), startGroup(t, "sleep 30")
	endA, endB := Track(a.Process.Pid), Track(b.Process.Pid)
	endB()
	if left := KillTracked(); len(left) != 0 {
		t.Errorf("left %v", left)
	}
	endA()
	waitGone(t, a.Process.Pid)
	if !Alive(b.Process.Pid) {
		t.Error("an untracked group was killed")
	}
}

// TestStopIsTracked: a group Stop is waiting on (one that ignores SIGTERM, as a
// resume's survivor may) is killed by KillTracked at once, not after the grace: a
// second Ctrl-C then leaves nothing running.
func TestStopIsTracked(t *testing.T) {
	cmd := startGroup(t, "trap '' TERM; sleep 30 & wait")
	pgid := cmd.Process.Pid
	waitMember(t, pgid) // the trap is set
	stopped := make(chan struct{})
	go func() { Stop(pgid, time.Minute); close(stopped) }()
	time.Sleep(200 * time.Millisecond) // Stop has sent SIGTERM, which the group ignores
	if !Alive(pgid) {
		t.Fatal("the group ended on SIGTERM: the test cannot show anything")
	}
	KillTracked()
	waitGone(t, pgid)
	select {
	case <-stopped:
	case <-time.After(5 * time.Second):
		t.Fatal("Stop still waits after its group was killed")
	}
	tracked.Lock()
	defer tracked.Unlock()
	if n := tracked.live[pgid]; n != 0 {
		t.Errorf("the stopped group is still tracked (%d)", n)
	}
}

func TestParseStat(t *testing.T) {
	fields := " 1 100 100 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 123456 0 0"
	tests := []struct {
		stat string
		want Info
		err  bool
	}{
		{stat: "100 (sleep) S" + fields, want: Info{Alive: true, Group: 100, Start: 123456}},
		{stat: "100 (a) b (c)) R" + fields, want: Info{Alive: true, Group: 100, Start: 123456}},
		{stat: "100 (sleep) Z" + fields, want: Info{Group: 100, Start: 123456}},
		{stat: "100 (x y) R 1", err: true},
		{stat: "garbage", err: true},
	}
	for _, tt := range tests {
		got, err := ParseStat([]byte(tt.stat))
		if (err != nil) != tt.err || got != tt.want {
			t.Errorf("ParseStat(%q) = %+v, %v; want %+v (error %v)", tt.stat, got, err, tt.want, tt.err)
		}
	}
}

// waitMember waits until group pgid has a process besides its leader.
func waitMember(t *testing.T, pgid int) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		entries, _ := os.ReadDir("/proc")
		for _, e := range entries {
			pid, err := strconv.Atoi(e.Name())
			if err != nil || pid == pgid {
				continue
			}
			if info, err := Inspect(pid); err == nil && info.Alive && info.Group == pgid {
				return
			}
		}
	}
	t.Fatalf("group %d got no member", pgid)
}
