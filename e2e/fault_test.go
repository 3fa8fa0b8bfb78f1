package e2e

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

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
// namespace of its own and watches its ConfigMaps from before the run to its end,
// across the restart: "nothing created twice" is exactly one ADDED per object and
// no DELETED (a uid count alone would pass an object deleted and created again),
// and the objects left are counted by their uids.
func TestFaultAPIServerRestart(t *testing.T) {
	binary(t)
	// The trials watch ConfigMaps across the restart from the last resourceVersion
	// seen. A watch cache starts over at a restart from etcd's current revision and
	// answers 410 to anything older ("too old resource version: 191 (192)", seen
	// here), so ConfigMap watches are served by etcd, which keeps every revision
	// until it is compacted (5 min). flow does not watch: nothing it does changes.
	s := kubetest.Start(t, kubetest.Options{APIServerArgs: []string{"--watch-cache-sizes=configmaps#0"}})
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
		events := watchConfigMaps(t, s.Clientset(t), ns)
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
		added, deleted := events.end(t, s.Clientset(t), ns, trial)
		var notOnce []string
		for i := range objects {
			if n := added[fmt.Sprintf("cm%d", i)]; n != 1 {
				notOnce = append(notOnce, fmt.Sprintf("cm%d %d times", i, n))
			}
		}
		if len(notOnce) > 0 {
			t.Errorf("%s: configmaps not added exactly once: %s", trial, strings.Join(notOnce, ", "))
		}
		if len(added) != objects || len(deleted) > 0 {
			t.Errorf("%s: %d configmaps added (want %d), deleted: %v", trial, len(added), objects, deleted)
		}
		lines := retryLines(r.stdout + r.stderr)
		if during == "k8s_apply" && !strings.Contains(strings.Join(lines, "\n"), "[k8s_apply.app]") {
			t.Errorf("%s: the restart did not reach the apply (no retry line of k8s_apply.app)\n%s", trial, r.stdout)
		}
		t.Logf("%s: down %s; run took %s; %d retry line(s)%s; watched %d ADDED, %d DELETED through %d watch(es)", trial, down.Round(10*time.Millisecond),
			p.ended.Sub(p.began).Round(10*time.Millisecond), len(lines), firstLine(lines), len(added), len(deleted), events.watches)
	}
}

func firstLine(lines []string) string {
	if len(lines) == 0 {
		return ""
	}
	return "; first: " + lines[0]
}

// watchEndMarker is the ConfigMap a trial creates after its run: once the watch
// delivers it, it has delivered every earlier event of the namespace.
const watchEndMarker = "watch-end"

// configMapWatch is a watch on one namespace's ConfigMaps, from the resourceVersion
// of a list taken before the trial, re-established after every break (an API server
// restart ends it) from the last resourceVersion it saw, so that no event is lost.
// A 410 (the server no longer has the events since that version) ends it with an
// error: events may have been lost, and the trial fails.
type configMapWatch struct {
	cancel context.CancelFunc
	done   chan struct{}

	mu      sync.Mutex
	rv      string
	added   map[string]int
	deleted map[string]int
	watches int   // watch requests the server accepted
	gone    error // the 410 that ended the watch
	lastErr error // the last failed watch request, for a timeout's message
}

func watchConfigMaps(t *testing.T, cs kubernetes.Interface, ns string) *configMapWatch {
	t.Helper()
	list, err := cs.CoreV1().ConfigMaps(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list configmaps in %s before the run: %v", ns, err)
	}
	for _, cm := range list.Items {
		t.Fatalf("configmap %s/%s exists before the run", ns, cm.Name)
	}
	ctx, cancel := context.WithCancel(t.Context())
	w := &configMapWatch{cancel: cancel, done: make(chan struct{}), rv: list.ResourceVersion,
		added: map[string]int{}, deleted: map[string]int{}}
	go w.run(ctx, cs, ns)
	t.Cleanup(w.stop)
	return w
}

func (w *configMapWatch) stop() {
	w.cancel()
	<-w.done
}

func (w *configMapWatch) run(ctx context.Context, cs kubernetes.Interface, ns string) {
	defer close(w.done)
	for ctx.Err() == nil {
		w.mu.Lock()
		rv := w.rv
		w.mu.Unlock()
		wi, err := cs.CoreV1().ConfigMaps(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true})
		if err != nil {
			if gone(err) {
				w.fail(err)
				return
			}
			w.mu.Lock()
			w.lastErr = err
			w.mu.Unlock()
			select { // refused while the server is down, or 429 while it starts
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
			continue
		}
		w.mu.Lock()
		w.watches++
		w.mu.Unlock()
		if err := w.consume(wi); err != nil {
			w.fail(err)
			return
		}
	}
}

// consume records the events of one watch until it ends; it returns the error of
// a 410, which must not be papered over by watching again from now.
func (w *configMapWatch) consume(wi watch.Interface) error {
	defer wi.Stop()
	for ev := range wi.ResultChan() {
		if ev.Type == watch.Error {
			if err := apierrors.FromObject(ev.Object); gone(err) {
				return err
			}
			return nil // any other error: watch again from the last version seen
		}
		cm, ok := ev.Object.(*corev1.ConfigMap)
		if !ok {
			return fmt.Errorf("watch event %s carries a %T", ev.Type, ev.Object)
		}
		w.mu.Lock()
		w.rv = cm.ResourceVersion
		switch ev.Type {
		case watch.Added:
			w.added[cm.Name]++
		case watch.Deleted:
			w.deleted[cm.Name]++
		}
		w.mu.Unlock()
	}
	return nil
}

func (w *configMapWatch) fail(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.gone = err
}

// gone reports whether err is a 410: the events since the asked-for version are gone.
func gone(err error) bool {
	var status apierrors.APIStatus
	return apierrors.IsGone(err) || apierrors.IsResourceExpired(err) ||
		(errors.As(err, &status) && status.Status().Code == http.StatusGone)
}

// end creates the end marker, waits until the watch delivered it, stops the watch
// and returns how often each ConfigMap was added and deleted, the marker left out.
// A watch that ended on a 410 fails the trial.
func (w *configMapWatch) end(t *testing.T, cs kubernetes.Interface, ns, trial string) (added, deleted map[string]int) {
	t.Helper()
	marker := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: watchEndMarker, Namespace: ns}}
	if _, err := cs.CoreV1().ConfigMaps(ns).Create(t.Context(), marker, metav1.CreateOptions{}); err != nil {
		t.Fatalf("%s: create the watch's end marker: %v", trial, err)
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		w.mu.Lock()
		seen, goneErr, lastErr := w.added[watchEndMarker] > 0, w.gone, w.lastErr
		w.mu.Unlock()
		if goneErr != nil {
			t.Fatalf("%s: the configmap watch lost events: %v", trial, goneErr)
		}
		if seen {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: the watch did not deliver the end marker within a minute (last watch error: %v)", trial, lastErr)
		}
	}
	w.stop()
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.added, watchEndMarker)
	return w.added, w.deleted
}
