package wait

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/flowdev/flow/tasks/kube/kubetest"
)

// createDeployment creates a Deployment of 3 replicas and writes status through the
// status subresource, as its controller would.
func createDeployment(ctx context.Context, c kubernetes.Interface, ns, name string, status appsv1.DeploymentStatus) error {
	replicas := int32(3)
	labels := map[string]string{"app": name}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx"}}},
			},
		},
	}
	d, err := c.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	d.Status = status
	_, err = c.AppsV1().Deployments(ns).UpdateStatus(ctx, d, metav1.UpdateOptions{})
	return err
}

func setDeploymentStatus(ctx context.Context, c kubernetes.Interface, ns, name string, status appsv1.DeploymentStatus) error {
	d, err := c.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	d.Status = status
	_, err = c.AppsV1().Deployments(ns).UpdateStatus(ctx, d, metav1.UpdateOptions{})
	return err
}

// rollout is the status of a Deployment of 3 replicas at generation 1 of which
// updated and available are so.
func rollout(observed int64, updated, available int32, conditions ...appsv1.DeploymentCondition) appsv1.DeploymentStatus {
	return appsv1.DeploymentStatus{
		ObservedGeneration: observed,
		Replicas:           3,
		UpdatedReplicas:    updated,
		ReadyReplicas:      available,
		AvailableReplicas:  available,
		Conditions:         conditions,
	}
}

func available(status corev1.ConditionStatus, reason string) appsv1.DeploymentCondition {
	return appsv1.DeploymentCondition{Type: appsv1.DeploymentAvailable, Status: status, Reason: reason}
}

func testDeployment(t *testing.T, s *kubetest.Server) {
	c := s.Clientset(t)
	ctx := t.Context()
	createNamespace(t, s, "deploy")
	tests := []struct {
		name     string
		status   appsv1.DeploymentStatus
		wantLast string // "" means ready
	}{
		{name: "rolled out", status: rollout(1, 3, 3, available(corev1.ConditionTrue, "MinimumReplicasAvailable"))},
		{name: "rolled out without conditions", status: rollout(1, 3, 3)},
		{name: "generation not observed", status: rollout(0, 3, 3), wantLast: "generation 1 not observed yet (observed 0)"},
		{name: "partly available", status: rollout(1, 3, 1), wantLast: "1/3 available"},
		{name: "updating", status: rollout(1, 2, 3), wantLast: "3/3 available, 2/3 updated"},
		{name: "unavailable", status: rollout(1, 3, 3, available(corev1.ConditionFalse, "MinimumReplicasUnavailable")),
			wantLast: "3/3 available, Available=False (reason: MinimumReplicasUnavailable)"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := "web" + string(rune('a'+i))
			check(t, createDeployment(ctx, c, "deploy", name, tt.status))
			w := kubeWait(s, WaitReady{Kind: "deployment", Namespace: "deploy", Name: name})
			if tt.wantLast != "" {
				w.WaitTimeout = shortWait
				wantTimeout(t, w, tt.wantLast)
				return
			}
			if _, _, err := run(ctx, t, w); err != nil {
				t.Fatalf("Run: %v", err)
			}
		})
	}

	t.Run("not found", func(t *testing.T) {
		wantTimeout(t, kubeWait(s, WaitReady{Kind: "deployment", Namespace: "deploy", Name: "absent", WaitTimeout: shortWait}), "not found")
	})

	// A rollout that never ends names its pods that are not ready, and why.
	t.Run("pods not ready", func(t *testing.T) {
		check(t, createDeployment(ctx, c, "deploy", "stuck", rollout(1, 3, 2)))
		check(t, createPod(ctx, c, "deploy", "stuck-0", "stuck", ""))
		check(t, setPodStatus(ctx, c, "deploy", "stuck-0", corev1.PodStatus{Phase: corev1.PodPending,
			Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable",
				Message: "0/1 nodes are available: 1 node(s) had untolerated taint."}}}))
		wantTimeout(t, kubeWait(s, WaitReady{Kind: "deployment", Namespace: "deploy", Name: "stuck", WaitTimeout: shortWait}),
			"2/3 available (stuck-0: Pending, Unschedulable: 0/1 nodes are available: 1 node(s) had untolerated taint.)")
	})

	t.Run("becomes available in namespace default", func(t *testing.T) {
		check(t, createDeployment(ctx, c, "default", "web", rollout(1, 3, 1)))
		w := kubeWait(s, WaitReady{Kind: "deployment", Name: "web"})
		runChanging(t, w, "1/3 available", func() error {
			return setDeploymentStatus(ctx, c, "default", "web", rollout(1, 3, 3, available(corev1.ConditionTrue, "MinimumReplicasAvailable")))
		})
	})
}
