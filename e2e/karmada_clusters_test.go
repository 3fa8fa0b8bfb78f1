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
// resourceVersion, resuming from the last one seen when a watch breaks. A kill inside
// a join followed by a resume must leave each cluster added once and never deleted:
// a join that deletes and registers a cluster again passes "the cluster exists".
type clusterWatch struct {
	cancel context.CancelFunc
	done   chan struct{}

	mu      sync.Mutex
	added   map[string]int
	deleted map[string]int
	err     error // what ended the watch early
}

func watchKarmadaClusters(t *testing.T, configDir string) *clusterWatch {
	ctx, cancel := context.WithCancel(t.Context())
	w := &clusterWatch{cancel: cancel, done: make(chan struct{}), added: map[string]int{}, deleted: map[string]int{}}
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
	var res dynamic.ResourceInterface
	var list *unstructured.UnstructuredList
	for ctx.Err() == nil { // until the run has brought the Karmada API server up
		if _, err := os.Stat(kubeconfig); err == nil {
			if cfg, err := kube.RESTConfig(kubeconfig, ""); err == nil {
				res = dynamic.NewForConfigOrDie(cfg).Resource(karmadaClusters)
				if list, err = res.List(ctx, metav1.ListOptions{}); err == nil {
					break
				}
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(500 * time.Millisecond):
		}
	}
	if ctx.Err() != nil {
		return
	}
	w.mu.Lock()
	for _, c := range list.Items {
		w.added[c.GetName()]++
	}
	w.mu.Unlock()
	rw, err := watchtools.NewRetryWatcher(list.GetResourceVersion(), &cache.ListWatch{
		WatchFunc: func(o metav1.ListOptions) (watch.Interface, error) { return res.Watch(ctx, o) },
	})
	if err != nil {
		w.fail(err)
		return
	}
	defer rw.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-rw.ResultChan():
			if !ok {
				return
			}
			w.record(ev)
		}
	}
}

func (w *clusterWatch) record(ev watch.Event) {
	if ev.Type == watch.Error {
		w.fail(apierrors.FromObject(ev.Object)) // a 410: events may be lost
		return
	}
	obj, ok := ev.Object.(*unstructured.Unstructured)
	if !ok {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	switch ev.Type {
	case watch.Added:
		w.added[obj.GetName()]++
	case watch.Deleted:
		w.deleted[obj.GetName()]++
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
	for member := range k8sLabClusterModes {
		if w.added[member] != 1 || w.deleted[member] != 0 {
			t.Errorf("trial %d: Karmada cluster %s added %d times and deleted %d times, want added once, never deleted",
				trial, member, w.added[member], w.deleted[member])
		}
	}
}
