package wait

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
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
	client          dynamic.Interface
	name, namespace string
}

func newDeploymentProbe(w *WaitReady) (probe, error) {
	c, err := kubeDynamic(w)
	if err != nil {
		return nil, err
	}
	return &deploymentProbe{client: c, name: w.Name, namespace: w.namespace()}, nil
}

func (p *deploymentProbe) check(ctx context.Context) (bool, string, error) {
	d, err := getAs[deployment](ctx, p.client.Resource(deploymentResource).Namespace(p.namespace), p.name)
	switch {
	case apierrors.IsNotFound(err):
		return false, "not found", nil
	case err != nil:
		return false, errorState(err), nil
	}
	ready, state := deploymentState(d)
	if !ready {
		state += p.podsNotReady(ctx, d)
	}
	return ready, state, nil
}

// podsNotReady says which of the Deployment's pods are not ready and why, as
// " (web-1: Pending, Unschedulable: ...)", so a rollout that never ends names its
// cause; "" when all are ready or they cannot be listed (the state says enough then).
func (p *deploymentProbe) podsNotReady(ctx context.Context, d *deployment) string {
	if d.Spec.Selector == nil {
		return ""
	}
	selector, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil {
		return ""
	}
	_, notReady, err := listNotReady(ctx, p.client, p.namespace, selector.String())
	if err != nil || len(notReady) == 0 {
		return ""
	}
	return " (" + summarize(notReady) + ")"
}

// deploymentState judges a rollout as kubectl rollout status does, plus the
// Available condition: "1/3 available, 2/3 updated".
func deploymentState(d *deployment) (bool, string) {
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
		if c.Type == "Available" && c.Status != "True" {
			return false, fmt.Sprintf("%s, Available=%s%s", state, c.Status, reasonSuffix(c.Reason))
		}
	}
	return true, state
}

var _ probe = (*deploymentProbe)(nil)
