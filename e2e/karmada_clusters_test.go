package e2e

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/flowdev/flow/tasks/kube"
)

// clusterWatch counts, over one trial of the k8s lab, how often each Karmada Cluster
// is added and deleted. It starts before the run and waits for the Karmada API server
// the run brings up (its kubeconfig in configDir); the clusters its first list holds
// count as added, then client-go's RetryWatcher follows from that list's
// resourceVersion, resuming from the last one seen when a watch breaks. When the
// server no longer has that version (410: karmada-aggregated-apiserver, which serves
// Clusters, restarted with an empty watch cache, as after init's host_network patch),
// it lists again and compares by uid: a cluster it had not seen counts as added, one
// gone as deleted, one with another uid as both. A kill inside a join followed by a
// resume must leave each cluster added once and never deleted: a join that deletes and
// registers a cluster again passes "the cluster exists".
type clusterWatch struct {
	cancel context.CancelFunc
	done   chan struct{}

	mu      sync.Mutex
	uids    map[string]types.UID // the clusters there now, by name
	added   map[string]int
	deleted map[string]int
	relists int
	err     error // what ended the watch early
}

func watchKarmadaClusters(t *testing.T, configDir string) *clusterWatch {
	ctx, cancel := context.WithCancel(t.Context())
	w := &clusterWatch{cancel: cancel, done: make(chan struct{}), uids: map[string]types.UID{}, added: map[string]int{}, deleted: map[string]int{}}
	go w.run(ctx, filepath.Join(configDir, "karmada", "karmada-apiserver.config"))
	t.Cleanup(w.stop)
	return w
}

func (w *clusterWatch) stop() {
	w.cancel()
	<-w.done
}

func (w *clusterWatch) run(ctx context.Context, kubeconfig string) {
	defer close(w.done)
	res := waitClusterAPI(ctx, kubeconfig)
	for res != nil && ctx.Err() == nil {
		list, err := res.List(ctx, metav1.ListOptions{})
		if err != nil {
			time.Sleep(500 * time.Millisecond) // the API server restarting
			continue
		}
		w.reconcile(list.Items)
		if err := w.follow(ctx, res, list.GetResourceVersion()); err != nil {
			w.fail(err)
			return
		}
	}
}

// waitClusterAPI waits until the run has brought the Karmada API server up and it
// lists Clusters; nil when ctx ends first.
func waitClusterAPI(ctx context.Context, kubeconfig string) dynamic.ResourceInterface {
	for ctx.Err() == nil {
		if _, err := os.Stat(kubeconfig); err == nil {
			if cfg, err := kube.RESTConfig(kubeconfig, ""); err == nil {
				res := dynamic.NewForConfigOrDie(cfg).Resource(karmadaClusters)
				if _, err = res.List(ctx, metav1.ListOptions{Limit: 1}); err == nil {
					return res
				}
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(500 * time.Millisecond):
		}
	}
	return nil
}

// follow records the events from version on until ctx ends (nil), the server no
// longer has the version it resumes from (nil: list again), or the watch fails.
func (w *clusterWatch) follow(ctx context.Context, res dynamic.ResourceInterface, version string) error {
	rw, err := watchtools.NewRetryWatcher(version, &cache.ListWatch{
		WatchFunc: func(o metav1.ListOptions) (watch.Interface, error) { return res.Watch(ctx, o) },
	})
	if err != nil {
		return err
	}
	defer rw.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-rw.ResultChan():
			if !ok {
				return nil
			}
			if ev.Type == watch.Error {
				if err := apierrors.FromObject(ev.Object); !apierrors.IsResourceExpired(err) && !apierrors.IsGone(err) {
					return err
				}
				w.mu.Lock()
				w.relists++
				w.mu.Unlock()
				return nil
			}
			w.record(ev)
		}
	}
}

// reconcile counts what a list shows against the clusters seen so far.
func (w *clusterWatch) reconcile(items []unstructured.Unstructured) {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := map[string]types.UID{}
	for _, c := range items {
		name, uid := c.GetName(), c.GetUID()
		now[name] = uid
		switch had, ok := w.uids[name]; {
		case !ok:
			w.added[name]++
		case had != uid:
			w.deleted[name]++
			w.added[name]++
		}
	}
	for name := range w.uids {
		if _, ok := now[name]; !ok {
			w.deleted[name]++
		}
	}
	w.uids = now
}

func (w *clusterWatch) record(ev watch.Event) {
	obj, ok := ev.Object.(*unstructured.Unstructured)
	if !ok {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	switch ev.Type {
	case watch.Added:
		w.added[obj.GetName()]++
		w.uids[obj.GetName()] = obj.GetUID()
	case watch.Deleted:
		w.deleted[obj.GetName()]++
		delete(w.uids, obj.GetName())
	}
}

func (w *clusterWatch) fail(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err == nil {
		w.err = err
	}
}

// check stops the watch and fails the trial unless each member's cluster was added
// exactly once and none was deleted.
func (w *clusterWatch) check(t *testing.T, trial int) {
	t.Helper()
	w.stop()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		t.Errorf("trial %d: the Karmada cluster watch ended early: %v", trial, w.err)
	}
	if w.relists > 0 {
		t.Logf("trial %d: the Karmada cluster watch listed again %d time(s): the server no longer had its resourceVersion (410)", trial, w.relists)
	}
	for member := range k8sLabClusterModes {
		if w.added[member] != 1 || w.deleted[member] != 0 {
			t.Errorf("trial %d: Karmada cluster %s added %d times and deleted %d times, want added once, never deleted",
				trial, member, w.added[member], w.deleted[member])
		}
	}
}
