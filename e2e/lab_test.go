package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	lxdclient "github.com/canonical/lxd/client"
	"github.com/canonical/lxd/shared/api"

	"github.com/flowdev/flow/internal/ci"
)

// The local lab (flows/local-lab.hcl) against the real LXD daemon: run it, SIGKILL flow at
// seeded moments, resume to completion, and check what LXD says: exactly the lab's
// containers exist, none was created twice, every forwarded port answers. Then the
// flow destroy must leave nothing behind.

var (
	labMembers   = map[string]int{"member1": 16441, "member2": 16442, "member3": 16444}
	labInstances = []string{"lab-registry", "lab-upstream", "member1", "member2", "member3"}
)

const (
	labTrials        = 4
	labInstanceCount = 38 // task instances of flows/local-lab.hcl with its defaults
	defaultLabSeed   = 20261122
	labRunTimeout    = 5 * time.Minute
)

// requireLXD connects to the local daemon. Without one the test is skipped, except
// with CI=true, where a missing daemon is a failure (make test starts it).
func requireLXD(t *testing.T) lxdclient.InstanceServer {
	t.Helper()
	srv, err := lxdclient.ConnectLXDUnix("", nil)
	if err == nil {
		_, _, err = srv.GetServer()
	}
	if err != nil {
		if ci.Enabled() {
			t.Fatalf("the LXD daemon is required (scripts/lab-setup.sh starts it): %v", err)
		}
		t.Skipf("no LXD daemon (run scripts/lab-setup.sh): %v", err)
	}
	return srv
}

// creations counts LXD's instance-created lifecycle events for the watched instances.
type creations struct {
	mu    sync.Mutex
	count map[string]int
}

// watchCreations counts creations of the named instances from now on.
func watchCreations(t *testing.T, srv lxdclient.InstanceServer, names []string) *creations {
	t.Helper()
	listener, err := srv.GetEvents()
	if err != nil {
		t.Fatalf("listen to LXD events: %v", err)
	}
	t.Cleanup(listener.Disconnect)
	c := &creations{count: map[string]int{}}
	_, err = listener.AddHandler([]string{api.EventTypeLifecycle}, func(e api.Event) {
		var lc api.EventLifecycle
		if json.Unmarshal(e.Metadata, &lc) != nil || lc.Action != api.EventLifecycleInstanceCreated {
			return
		}
		name := strings.TrimPrefix(lc.Source, "/1.0/instances/")
		if !slices.Contains(names, name) {
			return // other tests share the daemon
		}
		c.mu.Lock()
		c.count[name]++
		c.mu.Unlock()
	})
	if err != nil {
		t.Fatalf("listen to LXD events: %v", err)
	}
	return c
}

func (c *creations) reset() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	old := c.count
	c.count = map[string]int{}
	return old
}

// untilTheKillLands runs a trial's first run (landed reports whether its first kill or
// interruption came while it ran) until one lands, with undo between tries: a run that
// finished before its kill proved nothing. The third such run fails the test.
func untilTheKillLands(t *testing.T, trial int, landed func() bool, undo func()) {
	t.Helper()
	for attempt := 1; !landed(); attempt++ {
		if attempt == 3 {
			t.Fatalf("trial %d: three runs finished before their first kill", trial)
		}
		undo()
	}
}

// checkCreatedOnce: a trial starts from nothing, so each of names was created exactly
// once in it. Zero means the instance was never made in this trial, or the event
// listener is dead; either way "nothing created twice" would prove nothing.
func checkCreatedOnce(t *testing.T, trial int, created map[string]int, names []string) {
	t.Helper()
	for _, name := range names {
		if n := created[name]; n != 1 {
			t.Errorf("trial %d: instance %s was created %d times, want exactly once", trial, name, n)
		}
	}
}

func TestLocalLabKillAndResume(t *testing.T) {
	srv := requireLXD(t)
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	lab := filepath.Join(root, "flows", "local-lab.hcl")
	tag := newTag(t)
	clearLabs(t, tag, root) // the other labs use the same member names and ports
	events := watchCreations(t, srv, labInstances)

	seed := uint64(defaultLabSeed)
	if s, err := strconv.ParseUint(os.Getenv("E2E_SEED"), 10, 64); err == nil {
		seed = s
	}
	t.Logf("seed %d (set E2E_SEED to repeat)", seed)
	rng := rand.New(rand.NewPCG(seed, seed^0x1ab))

	var state string // the latest trial's: flow destroy undoes its run
	for trial := 1; trial <= labTrials; trial++ {
		events.reset()
		state = filepath.Join(t.TempDir(), fmt.Sprintf("lab-%d.db", trial))
		// The last trial is interrupted as a terminal's Ctrl-C does; the others
		// are SIGKILLed, once or twice, each time after a seeded number of
		// succeeded instances: early (launches in flight), middle (pushes,
		// proxies) or late (registries, builds, the mirror).
		untilTheKillLands(t, trial, func() bool {
			return !interruptLab(t, tag, root, lab, state, trial, rng, trial == labTrials)
		}, func() {
			destroyLab(t, tag, root, state)
			checkNothingLeft(t, srv)
			events.reset()
		})
		r := runFlow(t, tag, root, labRunTimeout, "resume", "--state", state)
		if r.code != 0 {
			t.Fatalf("trial %d: resume exited %d\n%s", trial, r.code, r.desc)
		}
		checkLab(t, srv, trial, events.reset())
		if trial < labTrials {
			destroyLab(t, tag, root, state)
			checkNothingLeft(t, srv)
		}
	}

	checkFlaskImport(t, tag, root)
	destroyLab(t, tag, root, state)
	checkNothingLeft(t, srv)
}

// interruptLab starts the lab and interrupts it one or two times at seeded moments,
// resuming in between. It reports whether the first run finished before its
// interruption came: then the trial proved nothing. A later run that finishes first
// is resumed (a no-op) by the caller.
func interruptLab(t *testing.T, tag, root, lab, state string, trial int, rng *rand.Rand, ctrlC bool) bool {
	t.Helper()
	args := []string{"run", lab, "--state", state}
	at := 0
	for n := 1 + rng.IntN(2); n > 0 && at < labInstanceCount-1; n-- {
		at += 1 + rng.IntN(labInstanceCount-1-at)
		p := start(t, tag, root, args...)
		if !waitSucceededLines(t, p, at) && p.wait(time.Minute) && p.code() == 0 {
			t.Logf("trial %d: the run finished before the interruption after %d instances", trial, at)
			return args[0] == "run"
		}
		how := "SIGKILL"
		if ctrlC {
			how = "SIGINT"
			_ = syscall.Kill(p.pid(), syscall.SIGINT) // it may have just finished
			if !p.wait(time.Minute) {
				t.Fatalf("trial %d: flow did not stop within a minute of SIGINT\n%s", trial, p.describe())
			}
			if p.code() != 130 && p.code() != 0 {
				t.Fatalf("trial %d: flow exited %d after SIGINT, want 130\n%s", trial, p.code(), p.describe())
			}
		} else {
			p.killGroup()
			p.wait(10 * time.Second)
		}
		if !p.signaled() && p.code() == 0 {
			t.Logf("trial %d: the run finished before the %s after %d instances", trial, how, at)
			return args[0] == "run"
		}
		t.Logf("trial %d: %s after %d succeeded instances", trial, how, at)
		args = []string{"resume", "--state", state}
	}
	return false
}

// waitSucceededLines waits until flow's output says at instances of the run succeeded
// (newly, or up to date on a resume) and reports true, or until flow exits first and
// reports false. It reads the output as it comes, every 10 ms: polling flow status
// (about 0.3 s a call while a run holds the state) let a fast lab finish between two
// looks three times in a row on a quiet machine (CI3).
func waitSucceededLines(t *testing.T, p *proc, at int) bool {
	t.Helper()
	deadline := time.Now().Add(labRunTimeout)
	for time.Now().Before(deadline) {
		n := 0
		for _, line := range strings.Split(p.stdout.String(), "\n") {
			if strings.Contains(line, ": succeeded in ") || strings.Contains(line, ": up to date (") {
				n++
			}
		}
		if n >= at {
			return true
		}
		if p.exited() {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("flow did not report %d succeeded instances within %s\n%s", at, labRunTimeout, p.describe())
	return false
}

func countStatus(d statusDoc, status string) int {
	n := 0
	for _, task := range d.Tasks {
		if task.Status == status {
			n++
		}
	}
	return n
}

// checkLab asserts the finished lab: exactly the lab's instances, each created exactly
// once during the trial, all running, every member answering through its forwarded
// port, and the mirrored images in the lab registry.
func checkLab(t *testing.T, srv lxdclient.InstanceServer, trial int, created map[string]int) {
	t.Helper()
	names, err := srv.GetInstanceNames(api.InstanceTypeAny)
	if err != nil {
		t.Fatal(err)
	}
	var lab []string
	for _, n := range names {
		if slices.Contains(labInstances, n) {
			lab = append(lab, n)
		}
	}
	slices.Sort(lab)
	if !slices.Equal(lab, labInstances) {
		t.Errorf("lab instances = %v, want %v", lab, labInstances)
	}
	checkCreatedOnce(t, trial, created, labInstances)
	for member, port := range labMembers {
		body := httpGet(t, fmt.Sprintf("http://127.0.0.1:%d/", port))
		if !strings.Contains(body, "member "+member) {
			t.Errorf("port %d answered %q, want the page of %s", port, body, member)
		}
	}
	catalog := httpGet(t, "http://127.0.0.1:32000/v2/_catalog")
	for _, repo := range []string{"karmada-controller-manager", "kube-apiserver", "etcd"} {
		if !strings.Contains(catalog, `"`+repo+`"`) {
			t.Errorf("lab registry catalog %s lacks %s", catalog, repo)
		}
	}
}

// checkFlaskImport runs the local variant of the Flask flow on the finished lab: the
// image is built without Docker on the mirrored base, exported to a tarball, pushed
// into every member and verified there by its sha256.
func checkFlaskImport(t *testing.T, tag, root string) {
	t.Helper()
	state := filepath.Join(t.TempDir(), "flask.db")
	r := runFlow(t, tag, root, labRunTimeout, "run", filepath.Join(root, "flows", "flask-import.hcl"),
		"--var-file", filepath.Join(root, "flows", "local-lab", "flask-import.vars.hcl"), "--state", state)
	if r.code != 0 {
		t.Fatalf("flask-import exited %d\n%s", r.code, r.desc)
	}
	for member := range labMembers {
		if !strings.Contains(r.stdout, fmt.Sprintf("[lxd_exec.verify[%q]] /root/flask-demo.tar: OK", member)) {
			t.Errorf("no sha256 check passed inside %s\n%s", member, r.desc)
		}
	}
}

// checkNothingLeft asserts that flow destroy removed the lab's instances, profile and
// image alias, and that nothing listens on the forwarded ports any more.
func checkNothingLeft(t *testing.T, srv lxdclient.InstanceServer) {
	t.Helper()
	names, err := srv.GetInstanceNames(api.InstanceTypeAny)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if slices.Contains(labInstances, n) {
			t.Errorf("instance %s survived the teardown", n)
		}
	}
	if _, _, err := srv.GetProfile("flow-lab"); err == nil {
		t.Error("profile flow-lab survived the teardown")
	}
	if _, _, err := srv.GetImageAlias("flow-lab-busybox"); err == nil {
		t.Error("image alias flow-lab-busybox survived the teardown")
	}
	for _, port := range []int{16441, 16442, 16444, 32000, 15000} {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d/", port), nil)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			t.Errorf("port %d still answers after the teardown", port)
		}
		cancel()
	}
}

func httpGet(t *testing.T, url string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Errorf("GET %s: %v", url, err)
		return ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}
