package e2e

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/flowdev/flow/internal/ci"
)

// scripts/apt-install.sh is the one place the project calls apt-get, and parallel tasks
// call it at once (the first run on a fresh machine failed when six tasks each ran
// apt-get). These tests hold apt's locks as another apt does (POSIX locks, which apt
// takes) and run it for real, installing two small packages from Debian's archive.

var aptTestPackages = []string{"hello", "sl"}

func requireAptRoot(t *testing.T) string {
	t.Helper()
	_, err := exec.LookPath("apt-get")
	if os.Getuid() != 0 || err != nil {
		if ci.Enabled() {
			t.Fatal("scripts/apt-install.sh needs root and apt-get, which CI must have")
		}
		t.Skip("needs root and apt-get")
	}
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	removeAptTestPackages(t)
	t.Cleanup(func() { removeAptTestPackages(t) })
	return filepath.Join(root, "scripts", "apt-install.sh")
}

func removeAptTestPackages(t *testing.T) {
	args := append([]string{"remove", "-y", "-qq", "-o", "DPkg::Lock::Timeout=300"}, aptTestPackages...)
	if out, err := exec.Command("apt-get", args...).CombinedOutput(); err != nil {
		t.Fatalf("apt-get remove: %v\n%s", err, out)
	}
}

func installed(pkg string) bool {
	out, err := exec.Command("dpkg-query", "-W", "-f=${Status}", pkg).Output()
	return err == nil && string(out) == "install ok installed"
}

// holdLock takes a POSIX write lock on path, as apt does, until the returned func.
func holdLock(t *testing.T, path string) func() {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o640)
	if err != nil {
		t.Fatal(err)
	}
	lk := syscall.Flock_t{Type: syscall.F_WRLCK, Whence: 0}
	if err := syscall.FcntlFlock(f.Fd(), syscall.F_SETLK, &lk); err != nil {
		f.Close()
		t.Fatalf("lock %s (is an apt running?): %v", path, err)
	}
	return func() { f.Close() } // closing the file releases the lock
}

// TestAptInstallWaitsForLocks: while another process holds apt's list lock (which
// `apt-get update` does not wait for) and dpkg's frontend lock, apt-install.sh says it
// waits, and installs once they are free, instead of failing as apt-get alone does. The
// locks are let go when it says it waits (or after two minutes, and then the test fails).
func TestAptInstallWaitsForLocks(t *testing.T) {
	script := requireAptRoot(t)
	release := []func(){holdLock(t, "/var/lib/apt/lists/lock"), holdLock(t, "/var/lib/dpkg/lock-frontend")}
	var once sync.Once
	releaseAll := func() {
		once.Do(func() {
			for _, r := range release {
				r()
			}
		})
	}
	defer releaseAll()

	// apt-get alone fails on the held lock at once: the fault this script exists for.
	if out, err := exec.Command("apt-get", "update", "-qq").CombinedOutput(); err == nil || !strings.Contains(string(out), "Could not get lock") {
		t.Fatalf("apt-get update under a held list lock: err %v, output %s; want a lock failure", err, out)
	}
	cmd := exec.Command("bash", script, aptTestPackages[0])
	pr, pw := io.Pipe()
	cmd.Stderr = pw
	var stderr bytes.Buffer
	waited := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			stderr.WriteString(sc.Text() + "\n")
			if strings.Contains(sc.Text(), "waiting for another apt") {
				select {
				case <-waited:
				default:
					close(waited)
				}
			}
		}
	}()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-waited:
	case <-time.After(2 * time.Minute):
	}
	releaseAll()
	err := cmd.Wait()
	pw.Close()
	if err != nil {
		t.Fatalf("apt-install.sh: %v\n%s", err, stderr.String())
	}
	select {
	case <-waited:
	default:
		t.Errorf("apt-install.sh never said it waited for the held locks:\n%s", stderr.String())
	}
	if !installed(aptTestPackages[0]) {
		t.Errorf("%s is not installed after apt-install.sh", aptTestPackages[0])
	}
}

// TestAptInstallParallel: tasks that start together each call apt-install.sh; every call
// succeeds, as the six that lost the race on a fresh machine did not.
func TestAptInstallParallel(t *testing.T) {
	script := requireAptRoot(t)
	var wg sync.WaitGroup
	errs := make([]string, len(aptTestPackages)*2)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pkg := aptTestPackages[i%len(aptTestPackages)]
			if out, err := exec.Command("bash", script, pkg).CombinedOutput(); err != nil {
				errs[i] = pkg + ": " + err.Error() + "\n" + string(out)
			}
		}()
	}
	wg.Wait()
	for _, e := range errs {
		if e != "" {
			t.Error(e)
		}
	}
	for _, pkg := range aptTestPackages {
		if !installed(pkg) {
			t.Errorf("%s is not installed", pkg)
		}
	}
}
