package wait

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/flowdev/flow/tasks/kube/kubetest"
)

func testCondition(t *testing.T, s *kubetest.Server) {
	ctx := t.Context()
	createNamespace(t, s, "cond")
	check(t, createDeployment(ctx, s.Clientset(t), "cond", "web-cond", rollout(1, 3, 3, available(corev1.ConditionTrue, "MinimumReplicasAvailable"))))
	ensureClusterCRD(t, s)
	clusters := s.Dynamic(t).Resource(clusterResource)
	check(t, createObject(ctx, clusters, clusterResource, "Cluster", "cond1", map[string]any{
		"conditions": conditions("Ready", "False", "ClusterNotReachable", "cluster is not reachable"),
	}))

	deployment := WaitReady{Kind: "condition", APIVersion: "apps/v1", ObjectKind: "Deployment", Namespace: "cond", Name: "web-cond", Condition: "Available"}
	cluster := WaitReady{Kind: "condition", APIVersion: "cluster.karmada.io/v1alpha1", ObjectKind: "Cluster", Name: "cond1", Condition: "Ready"}
	with := func(w WaitReady, f func(*WaitReady)) *WaitReady {
		w.WaitTimeout = shortWait
		f(&w)
		return kubeWait(s, w)
	}

	t.Run("ready", func(t *testing.T) {
		for _, w := range []*WaitReady{
			kubeWait(s, deployment),
			with(cluster, func(w *WaitReady) { w.ConditionStatus = "False" }),
		} {
			if _, _, err := run(ctx, t, w); err != nil {
				t.Errorf("Run: %v", err)
			}
		}
	})

	tests := []struct {
		name     string
		wait     *WaitReady
		wantLast string
	}{
		{"other status", with(deployment, func(w *WaitReady) { w.ConditionStatus = "False" }), "condition Available=True (reason: MinimumReplicasAvailable)"},
		{"condition not set", with(deployment, func(w *WaitReady) { w.Condition = "Progressing" }), "condition Progressing not set"},
		{"object not found", with(deployment, func(w *WaitReady) { w.Name = "absent" }), "not found"},
		{"namespace defaults to default", with(deployment, func(w *WaitReady) { w.Namespace = "" }), "not found"},
		{"cluster-scoped", with(cluster, func(*WaitReady) {}), "condition Ready=False (reason: ClusterNotReachable)"},
		{"unknown kind", with(cluster, func(w *WaitReady) { w.ObjectKind = "Clustre" }), `no matches for kind "Clustre" in version "cluster.karmada.io/v1alpha1"`},
		{"unknown version", with(deployment, func(w *WaitReady) { w.APIVersion = "apps/v2" }), `no matches for kind "Deployment" in version "apps/v2"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { wantTimeout(t, tt.wait, tt.wantLast) })
	}

	t.Run("stale condition", func(t *testing.T) {
		check(t, createObject(ctx, clusters, clusterResource, "Cluster", "cond2", nil))
		obj, err := clusters.Get(ctx, "cond2", metav1.GetOptions{})
		check(t, err)
		obj.Object["spec"] = map[string]any{"syncMode": "Pull"} // generation 2
		obj, err = clusters.Update(ctx, obj, metav1.UpdateOptions{})
		check(t, err)
		if obj.GetGeneration() != 2 {
			t.Fatalf("generation = %d, want 2", obj.GetGeneration())
		}
		cond := conditions("Ready", "True", "ClusterReady", "")
		cond[0].(map[string]any)["observedGeneration"] = int64(1)
		check(t, setStatus(ctx, clusters, "cond2", map[string]any{"conditions": cond}))
		wantTimeout(t, with(cluster, func(w *WaitReady) { w.Name = "cond2" }),
			"condition Ready=True (reason: ClusterReady), observed generation 1 of 2")
	})

	t.Run("namespace on a cluster-scoped kind", func(t *testing.T) {
		w := with(cluster, func(w *WaitReady) { w.Namespace = "cond"; w.WaitTimeout = "1m" })
		start := time.Now()
		_, _, err := run(ctx, t, w)
		if took := time.Since(start); took > 2*time.Second {
			t.Errorf("Run took %v, want it to end at once", took)
		}
		want := "wait for " + kinds["condition"].what(w) + `: Cluster is cluster-scoped: remove namespace "cond"`
		if err == nil || err.Error() != want {
			t.Errorf("Run error = %v\nwant %q", err, want)
		}
	})

	// The wait starts before the CRD that defines its kind exists, as when it follows
	// the installation of an operator.
	t.Run("kind defined mid-wait", func(t *testing.T) {
		widgets := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
		w := kubeWait(s, WaitReady{Kind: "condition", APIVersion: "example.com/v1", ObjectKind: "Widget",
			Namespace: "cond", Name: "w1", Condition: "Scheduled"})
		dyn := s.Dynamic(t)
		runChanging(t, w, `no matches for kind "Widget" in version "example.com/v1"`, func() error {
			if err := createCRD(context.Background(), dyn, widgets, "Widget", true); err != nil {
				return err
			}
			return createObject(context.Background(), dyn.Resource(widgets).Namespace("cond"), widgets, "Widget", "w1",
				map[string]any{"conditions": conditions("Scheduled", "True", "Scheduled", "")})
		})
	})

	// Discovery takes no context: a server that never answers it must not hold the
	// wait past wait_timeout, nor a cancelled run.
	t.Run("discovery unanswered", func(t *testing.T) {
		silent := writeKubeconfig(t, s, serve(t, hang(t)).URL)
		w := with(deployment, func(*WaitReady) {})
		w.Kubeconfig = silent
		start := time.Now()
		_, _, err := run(ctx, t, w)
		if took := time.Since(start); took > 3*time.Second {
			t.Errorf("Run took %v, want about %s", took, w.WaitTimeout)
		}
		if want := "not ready after " + shortWait + ": last no answer within "; err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Run error = %v, want it to contain %q", err, want)
		}

		w.WaitTimeout = "1m"
		cctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		defer cancel()
		start = time.Now()
		_, _, err = run(cctx, t, w)
		if took := time.Since(start); took > 2*time.Second {
			t.Errorf("cancelled Run took %v, want it to end at once", took)
		}
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("cancelled Run error = %v, want context.DeadlineExceeded", err)
		}
	})

	t.Run("deployment becomes unavailable", func(t *testing.T) {
		w := kubeWait(s, deployment)
		w.ConditionStatus = "False"
		c := s.Clientset(t)
		runChanging(t, w, "condition Available=True (reason: MinimumReplicasAvailable)", func() error {
			return setDeploymentStatus(ctx, c, "cond", "web-cond",
				rollout(1, 3, 1, appsv1.DeploymentCondition{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionFalse, Reason: "MinimumReplicasUnavailable"}))
		})
	})
}
