package e2e

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flowdev/flow/tasks/kube/kubetest"
)

// Fault tests restart the servers a run talks to in the middle of the run, at seeded
// moments, with no retry block in the flow: the run must succeed without a resume,
// create nothing twice and leave its state whole (docs/reliability.md lists them).

const (
	defaultFaultSeed = 13
	faultTrials      = 3
)

// faultRNG is the seeded generator of a fault test; E2E_SEED repeats a run.
func faultRNG(t *testing.T) *rand.Rand {
	seed := uint64(defaultFaultSeed)
	if s, err := strconv.ParseUint(os.Getenv("E2E_SEED"), 10, 64); err == nil {
		seed = s
	}
	t.Logf("seed %d (set E2E_SEED to repeat)", seed)
	return rand.New(rand.NewPCG(seed, seed^0xfa017))
}

// seededDuration is a duration in [lo, hi) drawn from rng.
func seededDuration(rng *rand.Rand, lo, hi time.Duration) time.Duration {
	return lo + time.Duration(rng.Int64N(int64(hi-lo)))
}

// checkRunWhole asserts what every fault trial ends with: the run exited 0 by itself,
// and its state reads back with every instance succeeded.
func checkRunWhole(t *testing.T, trial string, r result, tag, dir, state string) statusDoc {
	t.Helper()
	if r.code != 0 {
		t.Fatalf("%s: the run exited %d without a resume\n%s", trial, r.code, r.desc)
	}
	doc := status(t, tag, dir, state)
	if doc.Status != "succeeded" {
		t.Fatalf("%s: state says the run %s", trial, doc.Status)
	}
	for _, task := range doc.Tasks {
		if task.Status != "succeeded" || task.Attempts != 1 {
			t.Errorf("%s: %s %s after %d attempt(s): retries must happen inside the task", trial, task.Address, task.Status, task.Attempts)
		}
	}
	return doc
}

// retryLines returns the "transient fault" lines a run printed.
func retryLines(out string) []string {
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "transient fault: ") {
			lines = append(lines, strings.TrimSpace(l))
		}
	}
	return lines
}

// TestFaultAPIServerRestart kills a real kube-apiserver and starts it again (same
// port, certificates and etcd) while flow waits for it and while it applies 151
// objects, at seeded moments, with the server down for 1 to 4 s. Each trial uses a
// namespace of its own, so "nothing created twice" is checked by the objects in it
// and their uids.
func TestFaultAPIServerRestart(t *testing.T) {
	binary(t)
	s := kubetest.Start(t, kubetest.Options{})
	rng := faultRNG(t)
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	flow := testdata(t, "fault-kube.hcl")
	tag := newTag(t)
	const objects = 150
	for i, during := range []string{"wait_ready", "k8s_apply", "wait_ready", "k8s_apply", "k8s_apply", "wait_ready"} {
		trial := fmt.Sprintf("trial %d (restart during %s)", i+1, during)
		ns := fmt.Sprintf("fault-%d", i+1)
		state := filepath.Join(t.TempDir(), "state.db")
		down := seededDuration(rng, time.Second, 4*time.Second)
		restarted := make(chan struct{})
		args := []string{"run", flow, "--state", state, "--var", "kubeconfig=" + s.Kubeconfig,
			"--var", "namespace=" + ns, "--var", fmt.Sprintf("objects=%d", objects)}
		var p *proc
		if during == "wait_ready" {
			// Down before the run starts: the first wait meets refusals, then the server.
			go func() { defer close(restarted); s.RestartAPIServer(t, down) }()
			time.Sleep(100 * time.Millisecond)
			p = start(t, tag, root, args...)
		} else {
			p = start(t, tag, root, args...)
			waitStatus(t, tag, root, state, time.Minute, "k8s_apply.app running", func(d statusDoc) bool {
				return d.byAddress()["k8s_apply.app"].Status == "running"
			})
			time.Sleep(seededDuration(rng, 0, 100*time.Millisecond))
			go func() { defer close(restarted); s.RestartAPIServer(t, down) }()
		}
		if !p.wait(3 * time.Minute) {
			t.Fatalf("%s: the run did not finish in 3m\n%s", trial, p.describe())
		}
		<-restarted
		r := result{code: p.code(), stdout: p.stdout.String(), stderr: p.stderr.String(), desc: p.describe()}
		checkRunWhole(t, trial, r, tag, root, state)
		cms, err := s.Clientset(t).CoreV1().ConfigMaps(ns).List(t.Context(), metav1.ListOptions{})
		if err != nil {
			t.Fatalf("%s: list configmaps: %v", trial, err)
		}
		uids := map[string]bool{}
		for _, cm := range cms.Items {
			if cm.Name != "kube-root-ca.crt" {
				uids[string(cm.UID)] = true
			}
		}
		if len(uids) != objects {
			t.Errorf("%s: %d configmaps in %s, want %d", trial, len(uids), ns, objects)
		}
		lines := retryLines(r.stdout + r.stderr)
		if during == "k8s_apply" && !strings.Contains(strings.Join(lines, "\n"), "[k8s_apply.app]") {
			t.Errorf("%s: the restart did not reach the apply (no retry line of k8s_apply.app)\n%s", trial, r.stdout)
		}
		t.Logf("%s: down %s; run took %s; %d retry line(s)%s", trial, down.Round(10*time.Millisecond),
			p.ended.Sub(p.began).Round(10*time.Millisecond), len(lines), firstLine(lines))
	}
}

func firstLine(lines []string) string {
	if len(lines) == 0 {
		return ""
	}
	return "; first: " + lines[0]
}
