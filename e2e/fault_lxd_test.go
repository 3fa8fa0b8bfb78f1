package e2e

import (
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	lxdclient "github.com/canonical/lxd/client"
	"github.com/canonical/lxd/shared/api"
)

// faultGate is the variable that enables the tests that restart the shared LXD
// daemon. `make test` sets it in a step of its own, after every other package's
// tests, so that no other test talks to the daemon meanwhile.
const faultGate = "FLOW_FAULT_TESTS"

const (
	faultPrefix = "flt13"
	lxdSocket   = "/var/lib/lxd/unix.socket"
)

var faultMembers = map[string]int{"a": 16541, "b": 16542}

// lxdFaultMoments are the steps the daemon restart is aimed at, each with the
// tasks that must have succeeded before the kill: the kill then lands while the
// step runs (or, the step being quick, right after it, which is logged).
var lxdFaultMoments = []struct {
	step  string
	after []string // address prefixes that must all have succeeded
	// atCreation kills at the first instance-created event instead: LXD sends it
	// ~100 ms before the image is unpacked into the root volume.
	atCreation bool
}{
	{step: "launch", after: []string{"lxd_image_import.busybox", "lxd_profile.fault"}},
	{step: "file push", after: []string{"lxd_launch.member"}},
	{step: "exec", after: []string{"lxd_file_push.service"}},
	{step: "proxy device", after: []string{"lxd_exec.start_service"}},
	{step: "a create, at its instance-created event", atCreation: true},
}

// TestFaultLXDRestart SIGKILLs the LXD daemon during each of the lab's LXD steps, at
// a seeded moment after the step began, and starts it again 1 to 4 s later exactly
// as scripts/lab-setup.sh starts it. The flow has no retry block: each run must
// succeed by itself, no instance may be created twice (but for one lxd_launch
// replaced because the kill left it half-made, which the run says), and the state must
// be whole.
//
// It restarts the daemon every LXD test shares, so it runs only with
// FLOW_FAULT_TESTS=1 (see faultGate); instances, profile, alias and ports are the
// test's own (prefix flt13, ports 16541-16542).
func TestFaultLXDRestart(t *testing.T) {
	if os.Getenv(faultGate) != "1" {
		t.Skipf("restarts the shared LXD daemon: set %s=1 (make test runs it in a step of its own)", faultGate)
	}
	srv := requireLXD(t)
	binary(t)
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	rng := faultRNG(t)
	tag := newTag(t)
	flow := testdata(t, "fault-lxd.hcl")
	removeFaultLab(t)
	t.Cleanup(func() { removeFaultLab(t) })

	for i, m := range lxdFaultMoments {
		trial := fmt.Sprintf("trial %d (LXD restart during %s)", i+1, m.step)
		state := filepath.Join(t.TempDir(), "state.db")
		events := watchFaultCreations(t, srv)
		p := start(t, tag, root, "run", flow, "--state", state, "--var", "root="+root,
			"--var", "prefix="+faultPrefix, "--var", fmt.Sprintf("members={ a = %d, b = %d }", faultMembers["a"], faultMembers["b"]))
		var before statusDoc
		if m.atCreation {
			// Polling the status would be too slow for the ~100 ms the event leads by.
			events.waitCreated(t, 2*time.Minute)
		} else {
			before = waitStatus(t, tag, root, state, 2*time.Minute, trial+": the step's inputs", func(d statusDoc) bool {
				return allSucceeded(d, m.after)
			})
			time.Sleep(seededDuration(rng, 0, 200*time.Millisecond))
		}
		down := seededDuration(rng, time.Second, 4*time.Second)
		pid := killLXD(t)
		running := runningTasks(before)
		time.Sleep(down)
		startLXD(t, root)
		events.resubscribe(t)
		if !p.wait(4 * time.Minute) {
			t.Fatalf("%s: the run did not finish in 4m\n%s", trial, p.describe())
		}
		r := result{code: p.code(), stdout: p.stdout.String(), stderr: p.stderr.String(), desc: p.describe()}
		checkRunWhole(t, trial, r, tag, root, state)
		for name, n := range events.counts() {
			// lxd_launch creates again, once, an instance the kill left half-made, and says so.
			if replaced := strings.Count(r.stdout, fmt.Sprintf("instance %q does not start", name)); n > 1+replaced {
				t.Errorf("%s: instance %s was created %d times (%d of them replacing a half-made one)", trial, name, n, replaced)
			}
		}
		for member, port := range faultMembers {
			if body := httpGet(t, fmt.Sprintf("http://127.0.0.1:%d/", port)); !strings.Contains(body, "member "+member) {
				t.Errorf("%s: port %d answered %q, want the page of %s", trial, port, body, member)
			}
		}
		lines := retryLines(r.stdout + r.stderr)
		t.Logf("%s: killed daemon pid %d, down %s, running at the kill: %v; run took %s; %d half-made instance(s) replaced; %d retry line(s)%s",
			trial, pid, down.Round(10*time.Millisecond), running, p.ended.Sub(p.began).Round(10*time.Millisecond),
			strings.Count(r.stdout, "it was never whole"), len(lines), firstLine(lines))
		removeFaultLab(t)
	}
}

func allSucceeded(d statusDoc, prefixes []string) bool {
	for _, prefix := range prefixes {
		found := false
		for _, task := range d.Tasks {
			if strings.HasPrefix(task.Address, prefix) {
				found = true
				if task.Status != "succeeded" {
					return false
				}
			}
		}
		if !found {
			return false
		}
	}
	return true
}

func runningTasks(d statusDoc) []string {
	var out []string
	for _, task := range d.Tasks {
		if task.Status == "running" {
			out = append(out, task.Address)
		}
	}
	return out
}

// lxdDaemonPID asks the kernel which process listens on the daemon's socket
// (SO_PEERCRED): the daemon is found by its socket, never by its name.
func lxdDaemonPID() (int, error) {
	c, err := net.Dial("unix", lxdSocket)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	raw, err := c.(*net.UnixConn).SyscallConn()
	if err != nil {
		return 0, err
	}
	var cred *syscall.Ucred
	var credErr error
	if err := raw.Control(func(fd uintptr) {
		cred, credErr = syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED)
	}); err != nil {
		return 0, err
	}
	if credErr != nil {
		return 0, credErr
	}
	return int(cred.Pid), nil
}

// killLXD SIGKILLs the daemon, as a crash or a snap refresh's stop does, and waits
// until its socket no longer answers. Instances and their forkproxy processes live on.
func killLXD(t *testing.T) int {
	t.Helper()
	pid, err := lxdDaemonPID()
	if err != nil || pid <= 1 {
		t.Fatalf("find the LXD daemon by its socket %s: pid %d, %v", lxdSocket, pid, err)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill the LXD daemon (pid %d): %v", pid, err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if now, err := lxdDaemonPID(); err != nil || now != pid {
			return pid
		}
		if time.Now().After(deadline) {
			t.Fatalf("the LXD daemon (pid %d) still answers 10s after SIGKILL", pid)
		}
	}
}

// startLXD starts the daemon exactly as `make test` does: scripts/lab-setup.sh
// starts it when it is not running and waits until it is ready.
func startLXD(t *testing.T, root string) {
	t.Helper()
	cmd := exec.Command("bash", "scripts/lab-setup.sh")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("restart LXD with scripts/lab-setup.sh: %v\n%s", err, out)
	}
}

// faultCreations counts instance-created events of the test's instances across
// daemon restarts: the event stream dies with the daemon and is opened again.
type faultCreations struct {
	mu       sync.Mutex
	count    map[string]int
	listener *lxdclient.EventListener

	created     chan struct{} // closed at the first creation
	createdOnce sync.Once
}

func watchFaultCreations(t *testing.T, srv lxdclient.InstanceServer) *faultCreations {
	t.Helper()
	c := &faultCreations{count: map[string]int{}, created: make(chan struct{})}
	c.subscribe(t, srv)
	t.Cleanup(func() { c.listener.Disconnect() })
	return c
}

func (c *faultCreations) subscribe(t *testing.T, srv lxdclient.InstanceServer) {
	t.Helper()
	listener, err := srv.GetEvents()
	if err != nil {
		t.Fatalf("listen to LXD events: %v", err)
	}
	_, err = listener.AddHandler([]string{api.EventTypeLifecycle}, func(e api.Event) {
		var lc api.EventLifecycle
		if json.Unmarshal(e.Metadata, &lc) != nil || lc.Action != api.EventLifecycleInstanceCreated {
			return
		}
		name := strings.TrimPrefix(lc.Source, "/1.0/instances/")
		if !strings.HasPrefix(name, faultPrefix+"-") {
			return
		}
		c.mu.Lock()
		c.count[name]++
		c.mu.Unlock()
		c.createdOnce.Do(func() { close(c.created) })
	})
	if err != nil {
		t.Fatalf("listen to LXD events: %v", err)
	}
	c.listener = listener
}

// resubscribe opens the event stream on the restarted daemon.
func (c *faultCreations) resubscribe(t *testing.T) {
	t.Helper()
	c.listener.Disconnect()
	srv, err := lxdclient.ConnectLXDUnix("", nil)
	if err != nil {
		t.Fatalf("connect to the restarted LXD: %v", err)
	}
	c.subscribe(t, srv)
}

// waitCreated returns at the first creation of one of the test's instances.
func (c *faultCreations) waitCreated(t *testing.T, limit time.Duration) {
	t.Helper()
	select {
	case <-c.created:
	case <-time.After(limit):
		t.Fatalf("no instance was created in %s", limit)
	}
}

func (c *faultCreations) counts() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.count)
}

// removeFaultLab deletes what the fault flow creates, all named with faultPrefix:
// its instances, profile and image alias (the image itself may be the lab's too,
// under another alias, and stays).
func removeFaultLab(t *testing.T) {
	t.Helper()
	srv, err := lxdclient.ConnectLXDUnix("", nil)
	if err != nil {
		t.Logf("cleanup: %v", err)
		return
	}
	for member := range faultMembers {
		name := faultPrefix + "-" + member
		if op, err := srv.UpdateInstanceState(name, api.InstanceStatePut{Action: "stop", Force: true, Timeout: -1}, ""); err == nil {
			_ = op.Wait()
		}
		if op, err := srv.DeleteInstance(name); err == nil {
			_ = op.Wait()
		} else if !api.StatusErrorCheck(err, 404) {
			t.Errorf("cleanup: delete %s: %v", name, err)
		}
	}
	if err := srv.DeleteProfile(faultPrefix + "-profile"); err != nil && !api.StatusErrorCheck(err, 404) {
		t.Errorf("cleanup: delete profile: %v", err)
	}
	if err := srv.DeleteImageAlias(faultPrefix + "-busybox"); err != nil && !api.StatusErrorCheck(err, 404) {
		t.Errorf("cleanup: delete image alias: %v", err)
	}
}
