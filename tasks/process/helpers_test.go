package process

import (
	"context"
	"fmt"
	"net"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flowdev/flow/tasks"
	"github.com/flowdev/flow/tasks/taskstest"
)

func TestMain(m *testing.M) {
	checkEvery = 20 * time.Millisecond
	progressEvery = 150 * time.Millisecond
	pollEvery = 10 * time.Millisecond
	recreateStopTimeout = 2 * time.Second
	if pidFile := os.Getenv("FLOW_PROCESS_TEST_PID_FILE"); pidFile != "" {
		startThenHang(pidFile)
	}
	os.Exit(m.Run())
}

// startThenHang is the test binary run as a stand-in for flow: it starts `sleep 30`
// with the process task, says so, and hangs until it is killed.
func startThenHang(pidFile string) {
	p := &Process{Command: []string{"sleep", "30"}, PIDFile: pidFile, LogFile: pidFile + ".log"}
	if _, err := p.Run(context.Background(), &tasks.Env{}); err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	fmt.Println("started")
	select {}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

// freeAddr returns a loopback address nothing listens on (it was free a moment ago).
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return addr
}

// newProcess returns a process task for argv with its files in a test directory, and
// kills whatever its pid file names when the test ends.
func newProcess(t *testing.T, argv ...string) *Process {
	t.Helper()
	dir := t.TempDir()
	p := &Process{Command: argv, PIDFile: filepath.Join(dir, "run", "p.pid"), LogFile: filepath.Join(dir, "logs", "p.log")}
	t.Cleanup(func() { killRecorded(p.PIDFile) })
	return p
}

// killRecorded kills the process group a pid file names, if it is still that process.
func killRecorded(pidFile string) {
	rec, ok, err := readRecord(pidFile)
	if err != nil || !ok {
		return
	}
	if info, err := inspect(rec.PID); err == nil && rec.matches(info) {
		_ = syscall.Kill(-rec.PID, syscall.SIGKILL)
	}
}

// run runs task with a fresh Env and returns its outputs, what it printed and its error.
func run(ctx context.Context, t *testing.T, task tasks.Task) (tasks.Outputs, string, error) {
	t.Helper()
	if err := task.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	env, buf := taskstest.NewEnv(t)
	out, err := task.Run(ctx, env)
	return out, buf.String(), err
}

func outPID(t *testing.T, out tasks.Outputs) int {
	t.Helper()
	v, ok := out["pid"]
	if !ok {
		t.Fatalf("no pid output in %v", out)
	}
	n, _ := v.AsBigFloat().Int64()
	return int(n)
}

func alive(pid int) bool {
	info, err := inspect(pid)
	return err == nil && info.Alive
}

// waitDead waits until pid is gone; zombies count as gone.
func waitDead(t *testing.T, pid int) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if !alive(pid) {
			return
		}
	}
	t.Errorf("pid %d still runs", pid)
}

// spawn starts argv as a plain child of the test (not through the task), reaped and
// killed at the end of the test, and returns its pid.
func spawn(t *testing.T, argv ...string) int {
	t.Helper()
	cmd := osexec.Command(argv[0], argv[1:]...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	// Until the child has exec'd, /proc shows the test binary's command line.
	pid := cmd.Process.Pid
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline"); err == nil && strings.HasPrefix(string(b), argv[0]+"\x00") {
			break
		}
	}
	return pid
}

// recordOf returns a record of the running pid as the process task would write it.
func recordOf(t *testing.T, pid int) record {
	t.Helper()
	info, err := inspect(pid)
	if err != nil || !info.Alive {
		t.Fatalf("inspect %d: %+v, %v", pid, info, err)
	}
	cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		t.Fatal(err)
	}
	argv := strings.Split(strings.TrimSuffix(string(cmdline), "\x00"), "\x00")
	return record{PID: pid, Argv: argv, Start: info.Start, BootID: bootID()}
}

func readLog(t *testing.T, p *Process) string {
	t.Helper()
	b, err := os.ReadFile(p.LogFile)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func listenOn(t *testing.T, addr string) net.Listener {
	t.Helper()
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	return l
}
