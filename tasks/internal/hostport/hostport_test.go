package hostport

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
)

func TestParent(t *testing.T) {
	if got, want := Parent(os.Getpid()), os.Getppid(); got != want {
		t.Errorf("Parent(self) = %d, want %d", got, want)
	}
	if got := Parent(1 << 30); got != 0 {
		t.Errorf("Parent(no such pid) = %d, want 0", got)
	}
}

func TestIsLXDProxy(t *testing.T) {
	for _, tt := range []struct {
		argv []string
		want bool
	}{
		{[]string{"/usr/bin/lxd", "forkproxy", "--", "2749"}, true},
		{[]string{"lxd", "forkproxy"}, true},
		{[]string{"lxd", "--group", "root"}, false},
		{[]string{"/usr/bin/socat", "forkproxy"}, false},
		{nil, false},
	} {
		if got := IsLXDProxy(tt.argv); got != tt.want {
			t.Errorf("IsLXDProxy(%q) = %v, want %v", tt.argv, got, tt.want)
		}
	}
}

// TestProxyOfLiveDaemon: a process whose parent is an "lxd" that is not itself a
// forkproxy belongs to a live daemon; one whose parent is anything else (here the test,
// as init is for a proxy whose daemon was killed) does not.
func TestProxyOfLiveDaemon(t *testing.T) {
	dir := t.TempDir()
	lxd := filepath.Join(dir, "lxd")
	if err := os.Symlink("/bin/sh", lxd); err != nil {
		t.Fatal(err)
	}
	daemon := exec.Command(lxd, "-c", "sleep 30 & echo $!; wait")
	out, err := daemon.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := daemon.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { daemon.Process.Kill(); daemon.Wait() }()
	var child int
	if _, err := fmt.Fscan(out, &child); err != nil {
		t.Fatal(err)
	}
	defer syscall.Kill(child, syscall.SIGKILL)
	if !ProxyOfLiveDaemon(child) {
		t.Errorf("a child of a running %q is not seen as the live daemon's", lxd)
	}
	orphan := exec.Command("sleep", "30")
	if err := orphan.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { orphan.Process.Kill(); orphan.Wait() }()
	if ProxyOfLiveDaemon(orphan.Process.Pid) {
		t.Error("a child of the test is seen as an LXD daemon's")
	}
}
