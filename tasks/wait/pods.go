package wait

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/zclconf/go-cty/cty"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"

	"github.com/flowdev/flow/tasks"
	"github.com/flowdev/flow/tasks/internal/output"
)

// podsKind is ready when at least min_count pods in namespace match selector and
// every one of them is Running, Ready and has an IP.
var podsKind = kind{
	attrs:    withKubeConn("namespace", "selector", "min_count"),
	validate: validatePods,
	what:     podsWhat,
	newProbe: newPodsProbe,
}

// podObject is the type of one element of the pods output.
var podObject = cty.Object(map[string]cty.Type{"name": cty.String, "ip": cty.String})

func podsWhat(w *WaitReady) string {
	if w.Selector == "" {
		return "pods in " + w.namespace() + kubeWhere(w)
	}
	return fmt.Sprintf("pods %q in %s%s", w.Selector, w.namespace(), kubeWhere(w))
}

func validatePods(w *WaitReady) error {
	if _, err := labels.Parse(w.Selector); err != nil {
		return &tasks.AttrError{Attr: "selector", Err: err}
	}
	if err := validateNamespace(w); err != nil {
		return err
	}
	return validateMinCount(w)
}

type podsProbe struct {
	client              kubernetes.Interface
	namespace, selector string
	min                 int
	ready               []corev1.Pod // set by the check that found them ready
}

func newPodsProbe(w *WaitReady) (probe, error) {
	c, err := kubeClientset(w)
	if err != nil {
		return nil, err
	}
	return &podsProbe{client: c, namespace: w.namespace(), selector: w.Selector, min: w.minCount()}, nil
}

func (p *podsProbe) check(ctx context.Context) (bool, string, error) {
	list, err := p.client.CoreV1().Pods(p.namespace).List(ctx, metav1.ListOptions{LabelSelector: p.selector})
	if err != nil {
		return false, errorState(err), nil
	}
	pods := list.Items
	slices.SortFunc(pods, func(a, b corev1.Pod) int { return cmp.Compare(a.Name, b.Name) })
	var notReady []string
	for i := range pods {
		if why := podNotReady(&pods[i]); why != "" {
			notReady = append(notReady, pods[i].Name+": "+why)
		}
	}
	state := countState("pods", len(pods)-len(notReady), len(pods), p.min, notReady)
	if len(notReady) > 0 || len(pods) < p.min {
		return false, state, nil
	}
	p.ready = pods
	return true, state, nil
}

// podNotReady says why a pod is not ready, or "" when it is. A pod being deleted
// is not: it is about to go, and its IP with it.
func podNotReady(p *corev1.Pod) string {
	switch {
	case p.DeletionTimestamp != nil:
		return "Terminating"
	case p.Status.Phase != corev1.PodRunning:
		if p.Status.Phase == "" {
			return string(corev1.PodPending)
		}
		return string(p.Status.Phase)
	case p.Status.PodIP == "":
		return "no pod IP"
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			return ""
		}
	}
	return "Running, not Ready"
}

func (p *podsProbe) outputs() tasks.Outputs {
	if len(p.ready) == 0 {
		return tasks.Outputs{"pods": cty.ListValEmpty(podObject), "pod_ips": output.StringList(nil)}
	}
	var objs []cty.Value
	var ips []string
	for _, pod := range p.ready {
		objs = append(objs, cty.ObjectVal(map[string]cty.Value{
			"name": cty.StringVal(pod.Name),
			"ip":   cty.StringVal(pod.Status.PodIP),
		}))
		ips = append(ips, pod.Status.PodIP)
	}
	return tasks.Outputs{"pods": cty.ListVal(objs), "pod_ips": output.StringList(ips)}
}

var (
	_ probe     = (*podsProbe)(nil)
	_ outputter = (*podsProbe)(nil)
)
