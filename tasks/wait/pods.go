package wait

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/zclconf/go-cty/cty"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/dynamic"

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
	client              dynamic.Interface
	namespace, selector string
	min                 int
	ready               []pod // set by the check that found them ready
}

func newPodsProbe(w *WaitReady) (probe, error) {
	c, err := kubeDynamic(w)
	if err != nil {
		return nil, err
	}
	return &podsProbe{client: c, namespace: w.namespace(), selector: w.Selector, min: w.minCount()}, nil
}

func (p *podsProbe) check(ctx context.Context) (bool, string, error) {
	pods, notReady, err := listNotReady(ctx, p.client, p.namespace, p.selector)
	if err != nil {
		return false, errorState(err), nil
	}
	state := countState("pods", len(pods)-len(notReady), len(pods), p.min, notReady)
	if len(notReady) > 0 || len(pods) < p.min {
		return false, state, nil
	}
	p.ready = pods
	return true, state, nil
}

// listNotReady lists the pods in namespace that match selector, sorted by name, and
// says of each one that is not ready why not ("web-0: Pending, Unschedulable: ..."),
// with its last event when its status gives no reason.
func listNotReady(ctx context.Context, client dynamic.Interface, namespace, selector string) ([]pod, []string, error) {
	pods, err := listAs[pod](ctx, client.Resource(podResource).Namespace(namespace), metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, nil, err
	}
	slices.SortFunc(pods, func(a, b pod) int { return cmp.Compare(a.Name, b.Name) })
	var notReady []string
	var events map[string]*event // read once, when a pod's status gives no reason
	for i := range pods {
		why := podNotReady(&pods[i])
		if why == "" {
			continue
		}
		if reason := podReason(&pods[i]); reason != "" {
			why += ", " + reason
		} else {
			if events == nil {
				events = lastEvents(ctx, client, namespace)
			}
			if e := events[string(pods[i].UID)]; e != nil {
				why += ", last event " + e.Reason + ": " + brief(e.Message)
			}
		}
		notReady = append(notReady, pods[i].Name+": "+why)
	}
	return pods, notReady, nil
}

// podNotReady says why a pod is not ready, or "" when it is. A pod being deleted
// is not: it is about to go, and its IP with it.
func podNotReady(p *pod) string {
	switch {
	case p.DeletionTimestamp != nil:
		return "Terminating"
	case p.Status.Phase != "Running":
		if p.Status.Phase == "" {
			return "Pending"
		}
		return p.Status.Phase
	case p.Status.PodIP == "":
		return "no pod IP"
	}
	for _, c := range p.Status.Conditions {
		if c.Type == "Ready" && c.Status == "True" {
			return ""
		}
	}
	return "Running, not Ready"
}

// podReason is what a not-ready pod's status says holds it up, the first of: a
// container waiting for a reason other than ContainerCreating or PodInitializing
// (ImagePullBackOff, ErrImagePull, CrashLoopBackOff, CreateContainerConfigError),
// a container that terminated with an error, the scheduler's PodScheduled=False
// (Unschedulable), the pod's own reason (Evicted). "" when it says nothing.
func podReason(p *pod) string {
	for _, cs := range slices.Concat(p.Status.InitContainerStatuses, p.Status.ContainerStatuses) {
		if w := cs.State.Waiting; w != nil && w.Reason != "" && w.Reason != "ContainerCreating" && w.Reason != "PodInitializing" {
			s := fmt.Sprintf("%s %s", cs.Name, w.Reason)
			if cs.RestartCount > 0 {
				s += fmt.Sprintf(" (restarted %d times)", cs.RestartCount)
			}
			if w.Message != "" {
				s += ": " + brief(w.Message)
			}
			return s
		}
		if t := cs.State.Terminated; t != nil && t.ExitCode != 0 {
			return fmt.Sprintf("%s %s (exit code %d)", cs.Name, t.Reason, t.ExitCode)
		}
	}
	for _, c := range p.Status.Conditions {
		if c.Type == "PodScheduled" && c.Status == "False" && c.Reason != "" {
			return c.Reason + messageSuffix(c.Message)
		}
	}
	if p.Status.Reason != "" {
		return p.Status.Reason + messageSuffix(p.Status.Message)
	}
	return ""
}

// lastEvents returns the latest event of each pod in the namespace, by pod UID.
// Without events (or without the right to list them) the states simply name no
// event: this is an explanation, never a reason to fail the check.
func lastEvents(ctx context.Context, client dynamic.Interface, namespace string) map[string]*event {
	events, err := listAs[event](ctx, client.Resource(eventResource).Namespace(namespace),
		metav1.ListOptions{FieldSelector: "involvedObject.kind=Pod"})
	last := map[string]*event{}
	if err != nil {
		return last
	}
	for i := range events {
		e := &events[i]
		prev := last[e.InvolvedObject.UID]
		if prev == nil {
			last[e.InvolvedObject.UID] = e
			continue
		}
		if t, pt := e.when(), prev.when(); !t.Before(&pt) {
			last[e.InvolvedObject.UID] = e
		}
	}
	return last
}

// brief shortens a message from the server to one readable part of a state line.
func brief(msg string) string {
	const most = 120
	msg = strings.Join(strings.Fields(msg), " ")
	if r := []rune(msg); len(r) > most {
		return string(r[:most]) + "..."
	}
	return msg
}

func messageSuffix(msg string) string {
	if msg == "" {
		return ""
	}
	return ": " + brief(msg)
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
