// Package lxdtest gives tests host B: the second LXD daemon that scripts/lab-host-b.sh
// runs on 127.0.0.2:8443, reached over HTTPS as a remote, as a real second machine is.
// It starts the daemon through that script (which owns it: its directory, pid, image
// copies) and hands tests its address, certificates and single-use trust tokens. It
// does not create or remove instances; tests name theirs uniquely and remove them.
//
// Without LXD a test is skipped, except under CI (internal/ci), where it fails.
// Tests in several packages share host B: each holds a shared lock while it uses it,
// and StopHostB, which stops it, takes that lock exclusively.
package lxdtest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/flowdev/flow/internal/ci"
)

// Home is host B's directory, as scripts/lab-host-b.sh keeps it.
const Home = "/var/lib/flow-host-b"

// HostB is how a test reaches host B.
type HostB struct {
	Address    string // https://127.0.0.2:8443
	Dir        string // its LXD_DIR, for `LXD_DIR=... lxc` inspections
	ClientCert string // a client certificate host B trusts, and its key
	ClientKey  string
	ServerCert string // host B's certificate, pinned
}

// Remote is the `remote` map of an LXD task that talks to host B.
func (h HostB) Remote() map[string]string {
	return map[string]string{"address": h.Address, "client_cert": h.ClientCert, "client_key": h.ClientKey, "server_cert": h.ServerCert}
}

// Lxc runs lxc against host B's unix socket and returns its combined output.
func (h HostB) Lxc(args ...string) (string, error) {
	cmd := exec.Command("lxc", args...)
	cmd.Env = append(os.Environ(), "LXD_DIR="+h.Dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("LXD_DIR=%s lxc %s: %w: %s", h.Dir, strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// Token returns a new single-use trust token of host B, as `lxc config trust add`
// makes one for a client that is to be added.
func (h HostB) Token(t testing.TB) string {
	t.Helper()
	out, err := script("token")
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(out)
}

var startOnce sync.Mutex

// StartHostB starts host B unless it runs (scripts/lab-host-b.sh start; only the
// small busybox image is brought to it) and holds a shared lock on it until the test
// ends. It skips the test when LXD is not installed, and fails it under CI.
func StartHostB(t testing.TB) HostB {
	t.Helper()
	return startHostB(t, syscall.LOCK_SH)
}

// HoldHostB is StartHostB for a test that kills host B's daemon: it holds host B alone
// (an exclusive lock, taken once no other test uses it) until the test ends. It skips
// and fails as StartHostB does.
func HoldHostB(t testing.TB) HostB {
	t.Helper()
	return startHostB(t, syscall.LOCK_EX)
}

// startHostB skips the test without LXD (fails it under CI), takes host B's lock in
// mode until the test ends, and starts host B unless it runs.
func startHostB(t testing.TB, mode int) HostB {
	t.Helper()
	if _, err := exec.LookPath("lxd"); err != nil {
		if ci.Enabled() {
			t.Fatalf("host B needs lxd (CI=%s: scripts/lab-setup.sh installs it): %v", os.Getenv("CI"), err)
		}
		t.Skipf("host B needs lxd (scripts/lab-setup.sh installs it): %v", err)
	}
	unlock := lock(t, mode)
	t.Cleanup(unlock)
	startOnce.Lock()
	defer startOnce.Unlock()
	if out, err := script("start"); err != nil {
		t.Fatalf("start host B: %v\n%s", err, out)
	}
	client := filepath.Join(Home, "client")
	return HostB{
		Address:    "https://127.0.0.2:8443",
		Dir:        filepath.Join(Home, "lxd"),
		ClientCert: filepath.Join(client, "client.crt"),
		ClientKey:  filepath.Join(client, "client.key"),
		ServerCert: filepath.Join(client, "servercerts", "flow-host-b.crt"),
	}
}

// StopHostB stops host B for the rest of the test, once no other test uses it, and
// starts it again when the test ends. The caller must not hold StartHostB's lock.
func StopHostB(t testing.TB) {
	t.Helper()
	unlock := lock(t, syscall.LOCK_EX)
	t.Cleanup(func() {
		defer unlock()
		if out, err := script("start"); err != nil {
			t.Errorf("start host B again: %v\n%s", err, out)
		}
	})
	if out, err := script("stop"); err != nil {
		t.Fatalf("stop host B: %v\n%s", err, out)
	}
}

// lock takes the lock file of host B's users in mode; the returned func releases it.
func lock(t testing.TB, mode int) func() {
	t.Helper()
	return lockIn(t, Home, mode)
}

// lockIn takes the lock file of the users of the daemons under home in mode; the
// returned func releases it.
func lockIn(t testing.TB, home string, mode int) func() {
	t.Helper()
	if err := os.MkdirAll(home, 0o711); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(filepath.Join(home, "tests.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(f.Fd()), mode); err != nil {
		f.Close()
		t.Fatal(err)
	}
	return func() { f.Close() }
}

// script runs scripts/lab-host-b.sh with the small image only: the member image is
// the two-host lab's, not the unit tests'.
func script(arg string) (string, error) {
	return scriptWith(arg, "flow-lab-busybox")
}

// scriptWith runs scripts/lab-host-b.sh arg bringing the images named to host B.
func scriptWith(arg, images string) (string, error) {
	cmd := exec.Command("bash", filepath.Join(repoRoot(), "scripts", "lab-host-b.sh"), arg)
	cmd.Env = append(os.Environ(), "HOSTB_IMAGES="+images)
	out, err := cmd.Output()
	if ee, ok := err.(*exec.ExitError); ok {
		out = append(out, ee.Stderr...)
	}
	return string(out), err
}

// repoRoot is the module's directory, found from this file's.
func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// KillAndRestart SIGKILLs host B's daemon, as a crash would (its instances keep
// running, as they do when LXD dies), waits until it is gone and starts it again. The
// caller must hold host B (HoldHostB).
func (h HostB) KillAndRestart(t testing.TB) {
	t.Helper()
	killDaemon(t, "host B", filepath.Join(Home, "lxd.pid"))
	if out, err := script("start"); err != nil {
		t.Fatalf("start host B again: %v\n%s", err, out)
	}
}

// killDaemon SIGKILLs the lxd whose pid pidFile records and waits until it is gone;
// what names it in failures.
func killDaemon(t testing.TB, what, pidFile string) {
	t.Helper()
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatalf("%s's pid file: %v", what, err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 1 {
		t.Fatalf("%s's pid file holds %q", what, b)
	}
	if exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); !strings.HasSuffix(exe, "/lxd") {
		t.Fatalf("pid %d of %s's pid file is not lxd (%q)", pid, what, exe)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill %s's lxd (pid %d): %v", what, pid, err)
	}
	for i := 0; running(pid); i++ {
		if i == 100 {
			t.Fatalf("%s's lxd (pid %d) outlived SIGKILL for 10s", what, pid)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// running reports whether pid is a process that has not exited (a zombie has).
func running(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	fields := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	return len(fields) > 0 && fields[0] != "Z"
}
