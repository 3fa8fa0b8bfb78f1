package exec

import (
	"context"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flowdev/flow/tasks/taskstest"
)

// When flow is SIGKILLed, the program an exec task started must die with it, or a
// resume would race a leftover copy. The test re-runs itself as a stand-in flow.
func TestProgramDiesWithSIGKILLedFlow(t *testing.T) {
	if pidFile := os.Getenv("FLOW_EXEC_STANDIN_PIDFILE"); pidFile != "" {
		env, _ := taskstest.NewEnv(t)
		_, _ = (&Exec{Script: "echo $$ > " + pidFile + "; exec sleep 60"}).Run(context.Background(), env)
		return
	}
	pidFile := filepath.Join(t.TempDir(), "pid")
	standin := osexec.Command(os.Args[0], "-test.run=^TestProgramDiesWithSIGKILLedFlow$")
	standin.Env = append(os.Environ(), "FLOW_EXEC_STANDIN_PIDFILE="+pidFile)
	if err := standin.Start(); err != nil {
		t.Fatal(err)
	}
	var pid int
	for deadline := time.Now().Add(10 * time.Second); pid == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			_ = standin.Process.Kill()
			t.Fatal("the stand-in flow never started its program")
		}
		b, _ := os.ReadFile(pidFile)
		pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
	}
	_ = standin.Process.Signal(syscall.SIGKILL)
	_ = standin.Wait()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if err := syscall.Kill(pid, 0); err != nil {
			return // gone
		}
		if stat, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); strings.Contains(string(stat), ") Z ") {
			return // dead, waiting to be reaped by init
		}
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("program (pid %d) still runs 5s after its flow was SIGKILLed", pid)
		}
	}
}
