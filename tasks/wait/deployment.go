package wait

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// deploymentKind is ready when Deployment name in namespace has rolled out: its
// controller has seen the latest spec and every desired replica is updated and
// available.
var deploymentKind = kind{
	attrs:    withKubeConn("name", "namespace"),
	required: []string{"name"},
	validate: validateDeployment,
	what:     func(w *WaitReady) string { return "deployment " + w.namespace() + "/" + w.Name + kubeWhere(w) },
	newProbe: newDeploymentProbe,
}

func validateDeployment(w *WaitReady) error {
	if err := validateDNSName("name", w.Name); err != nil {
		return err
	}
	return validateNamespace(w)
}

type deploymentProbe struct {
	client          kubernetes.Interface
	name, namespace string
}

func newDeploymentProbe(w *WaitReady) (probe, error) {
	c, err := kubeClientset(w)
	if err != nil {
		return nil, err
	}
	return &deploymentProbe{client: c, name: w.Name, namespace: w.namespace()}, nil
}

func (p *deploymentProbe) check(ctx context.Context) (bool, string, error) {
	d, err := p.client.AppsV1().Deployments(p.namespace).Get(ctx, p.name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return false, "not found", nil
	case err != nil:
		return false, errorState(err), nil
	}
	ready, state := deploymentState(d)
	return ready, state, nil
}

// deploymentState judges a rollout as kubectl rollout status does, plus the
// Available condition: "1/3 available, 2/3 updated".
func deploymentState(d *appsv1.Deployment) (bool, string) {
	st := d.Status
	if st.ObservedGeneration < d.Generation {
		return false, fmt.Sprintf("generation %d not observed yet (observed %d)", d.Generation, st.ObservedGeneration)
	}
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	state := fmt.Sprintf("%d/%d available", st.AvailableReplicas, want)
	if st.UpdatedReplicas != want {
		state += fmt.Sprintf(", %d/%d updated", st.UpdatedReplicas, want)
	}
	if st.UpdatedReplicas != want || st.AvailableReplicas != want {
		return false, state
	}
	for _, c := range st.Conditions {
		if c.Type == appsv1.DeploymentAvailable && c.Status != corev1.ConditionTrue {
			return false, fmt.Sprintf("%s, Available=%s%s", state, c.Status, reasonSuffix(c.Reason))
		}
	}
	return true, state
}

var _ probe = (*deploymentProbe)(nil)
