package host

import (
	"os"
	"os/exec"
	"testing"
	"time"
)

// TestAliveZombie: a process that exited and is not reaped yet (a plugin host killed
// with its flow, before init reaps it) is not alive, so its socket root is swept.
func TestAliveZombie(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc here")
	}
	cmd := exec.Command("true")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Wait() }()
	pid := cmd.Process.Pid
	for deadline := time.Now().Add(5 * time.Second); !zombie(pid); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("pid %d did not become a zombie", pid)
		}
	}
	if alive(pid) {
		t.Errorf("a zombie is alive")
	}
	if !alive(os.Getpid()) {
		t.Errorf("this process is not alive")
	}
}
