package preflight

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/flowdev/flow/internal/ci"
	"github.com/flowdev/flow/internal/lxdtest"
	"github.com/flowdev/flow/tasks"
	"github.com/flowdev/flow/tasks/taskstest"
)

// listen binds a free loopback port for the test and returns it.
func listen(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l.Addr().(*net.TCPAddr).Port
}

func run(t *testing.T, p *Preflight) (tasks.Outputs, string, error) {
	t.Helper()
	if err := p.Validate(); err != nil {
		t.Fatalf("Validate() = %v", err)
	}
	env, buf := taskstest.NewEnv(t)
	out, err := p.Run(t.Context(), env)
	return out, buf.String(), err
}

var noLXD = new(bool)

// TestPortHeldByAnotherProcess binds a real port: preflight names this test's
// pid and command, and a free port passes.
func TestPortHeldByAnotherProcess(t *testing.T) {
	held := listen(t)
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	free := l.Addr().(*net.TCPAddr).Port
	l.Close()
	_, printed, err := run(t, &Preflight{LXD: noLXD, Ports: []int{free, held}})
	if err == nil {
		t.Fatalf("no error; printed:\n%s", printed)
	}
	want := fmt.Sprintf("port %d on 127.0.0.1 is held by pid %d (%s", held, os.Getpid(), filepath.Base(os.Args[0]))
	if !strings.Contains(err.Error(), want) || !strings.Contains(printed, "problem: "+want) {
		t.Errorf("error %q / printed %q: want %q", err, printed, want)
	}
	if !strings.Contains(printed, fmt.Sprintf("ok: port %d is free", free)) {
		t.Errorf("the free port is not reported free:\n%s", printed)
	}
	if strings.Count(err.Error(), "port ") != 1 || !strings.HasPrefix(err.Error(), "preflight: 1 problem(s): ") {
		t.Errorf("error %q: want exactly the held port", err)
	}
}

// TestPortHeldByThisFlow: a port held by the process group a pid file of this
// flow records is the lab's own. The pid file is the process task's format.
func TestPortHeldByThisFlow(t *testing.T) {
	held := listen(t)
	pidFile := filepath.Join(t.TempDir(), "lab.pid")
	stat, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	boot, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	// This test does not lead its process group; record the group leader, as the
	// process task records the process it started (which leads its group).
	pgrp, _ := strconv.Atoi(f[2])
	holder := os.Getpid()
	leaderStat, err := os.ReadFile("/proc/" + strconv.Itoa(pgrp) + "/stat")
	if err != nil {
		// The leader is not visible (it exited, or runs outside this PID namespace),
		// so no pid file can name this process's group. Then a child that leads a
		// group of its own holds a port instead, as a process task's daemon would.
		t.Logf("the process group leader %d is not visible (%v): a child leading its own group holds the port", pgrp, err)
		held, holder = groupLeaderHolding(t)
		pgrp = holder
		if leaderStat, err = os.ReadFile("/proc/" + strconv.Itoa(pgrp) + "/stat"); err != nil {
			t.Fatal(err)
		}
	}
	lf := strings.Fields(string(leaderStat[strings.LastIndexByte(string(leaderStat), ')')+1:]))
	content := fmt.Sprintf("%d\n{\"argv\":[\"go\"],\"start_ticks\":%s,\"boot_id\":%q}\n", pgrp, lf[19], strings.TrimSpace(string(boot)))
	if err := os.WriteFile(pidFile, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	out, printed, err := run(t, &Preflight{LXD: noLXD, Ports: []int{held}, PIDFiles: []string{pidFile}})
	if err != nil {
		t.Fatalf("Run() = %v; printed:\n%s", err, printed)
	}
	if !strings.Contains(printed, fmt.Sprintf("port %d is already the lab's: pid %d, of pid file %s", held, holder, pidFile)) {
		t.Errorf("printed:\n%s", printed)
	}
	if n := len(out["checked"].AsValueSlice()); n != 1 {
		t.Errorf("checked has %d lines, want 1", n)
	}
}

// groupLeaderHolding starts a child that leads a process group of its own and is
// the only holder of a loopback port, and returns the port and the child's pid.
func groupLeaderHolding(t *testing.T) (port, pid int) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	f, err := l.(*net.TCPListener).File()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cmd := exec.Command("sleep", "60")
	cmd.ExtraFiles = []*os.File{f}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return l.Addr().(*net.TCPAddr).Port, cmd.Process.Pid
}

func TestResourcesAndCNI(t *testing.T) {
	_, printed, err := run(t, &Preflight{LXD: noLXD, MinFreeDiskMB: 1 << 40, MinMemoryMB: 1 << 40,
		CNIConfigDirs: []string{"testdata/cni", "testdata/cni-v4"}})
	if err == nil {
		t.Fatalf("no error; printed:\n%s", printed)
	}
	for _, want := range []string{
		"/ has ", "MiB free; the lab needs 1099511627776 MiB",
		"MiB of memory available; the lab needs 1099511627776 MiB",
		"CNI configuration testdata/cni/10-dual.conflist enables IPv6 (fd00:10:1::/64)",
		"ok: no IPv6 range in the CNI configurations of testdata/cni-v4 (1 files)",
		"preflight: 3 problem(s)",
	} {
		if !strings.Contains(printed+err.Error(), want) {
			t.Errorf("missing %q in:\n%s\n%v", want, printed, err)
		}
	}
}

// TestLXD talks to the real daemon: the storage pool exists, a missing one is a
// problem of its own, and the default profile has a root disk.
func TestLXD(t *testing.T) {
	if !fileExists(lxdSocket()) {
		if ci.Enabled() {
			t.Fatalf("no LXD socket at %s (CI=%s: scripts/lab-setup.sh must have started it)", lxdSocket(), os.Getenv("CI"))
		}
		t.Skipf("no LXD socket at %s; scripts/lab-setup.sh starts the daemon", lxdSocket())
	}
	_, printed, err := run(t, &Preflight{Privileged: true})
	if err != nil {
		t.Fatalf("Run() = %v; printed:\n%s", err, printed)
	}
	for _, want := range []string{"ok: LXD daemon answers", `ok: LXD storage pool "default" exists`, `has a root disk`, "privileged and nested containers are possible"} {
		if !strings.Contains(printed, want) {
			t.Errorf("missing %q in:\n%s", want, printed)
		}
	}
	_, printed, err = run(t, &Preflight{StoragePool: "flow-preflight-missing"})
	if err == nil || !strings.Contains(err.Error(), `LXD storage pool "flow-preflight-missing"`) {
		t.Errorf("missing pool: error %v; printed:\n%s", err, printed)
	}
}

func TestValidate(t *testing.T) {
	for _, tt := range []struct {
		p    Preflight
		want string
	}{
		{Preflight{Ports: []int{0}}, "ports: 0 is not a TCP port"},
		{Preflight{Ports: []int{70000}}, "ports: 70000 is not a TCP port"},
		{Preflight{MinFreeDiskMB: -1}, "min_free_disk_mb: must not be negative"},
		{Preflight{PIDFiles: []string{""}}, "pid_files: must not hold an empty path"},
	} {
		if err := tt.p.Validate(); err == nil || err.Error() != tt.want {
			t.Errorf("Validate(%+v) = %v, want %q", tt.p, err, tt.want)
		}
	}
}

// TestRemoteHostDown stops host B (the second real LXD daemon, internal/lxdtest): the
// preflight names it and its address in one problem, instead of a timeout per task.
// Running, it answers.
func TestRemoteHostDown(t *testing.T) {
	remotes := func(hb lxdtest.HostB) map[string]map[string]string {
		return map[string]map[string]string{"b": hb.Remote()}
	}
	hb := startHostB(t)
	_, printed, err := run(t, &Preflight{LXD: noLXD, Remotes: remotes(hb)})
	if err != nil || !strings.Contains(printed, `ok: LXD host "b" answers at https://127.0.0.2:8443`) {
		t.Fatalf("host B running: error %v; printed:\n%s", err, printed)
	}
	lxdtest.StopHostB(t)
	_, printed, err = run(t, &Preflight{LXD: noLXD, Remotes: remotes(hb)})
	want := `LXD host "b" at https://127.0.0.2:8443 does not answer: `
	if err == nil || !strings.HasPrefix(err.Error(), "preflight: 1 problem(s): "+want) || strings.Count(printed, "problem: ") != 1 {
		t.Fatalf("host B stopped: error %v; printed:\n%s", err, printed)
	}
	t.Logf("as the user sees it: %v", err)
}

// startHostB starts host B for the length of a subtest-free check and releases it
// at once, so that the test can stop it afterwards.
func startHostB(t *testing.T) lxdtest.HostB {
	var hb lxdtest.HostB
	t.Run("start host B", func(t *testing.T) { hb = lxdtest.StartHostB(t) })
	if hb.Address == "" {
		t.Skip("host B is not available") // under CI the subtest failed already
	}
	return hb
}
