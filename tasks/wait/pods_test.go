package wait

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/zclconf/go-cty/cty"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/flowdev/flow/tasks"
	"github.com/flowdev/flow/tasks/kube/kubetest"
)

// createPod creates a pod labelled app; a non-empty ip makes it Running and Ready
// with that IP, as a kubelet would report.
func createPod(ctx context.Context, c kubernetes.Interface, ns, name, app, ip string) error {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"app": app}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "busybox"}}},
	}
	if _, err := c.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil || ip == "" {
		return err
	}
	return setPodRunning(ctx, c, ns, name, ip, corev1.ConditionTrue)
}

func setPodRunning(ctx context.Context, c kubernetes.Interface, ns, name, ip string, ready corev1.ConditionStatus) error {
	return setPodStatus(ctx, c, ns, name, corev1.PodStatus{
		Phase:      corev1.PodRunning,
		PodIP:      ip,
		PodIPs:     []corev1.PodIP{{IP: ip}},
		Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: ready}},
	})
}

// outPods returns the pods output as "name=ip" strings, checking its type.
func outPods(t *testing.T, out tasks.Outputs) []string {
	t.Helper()
	v, ok := out["pods"]
	if !ok || !v.Type().Equals(cty.List(podObject)) {
		t.Fatalf("output pods = %#v, want a list of objects {name, ip}", v)
	}
	pods := []string{}
	for _, p := range v.AsValueSlice() {
		pods = append(pods, p.GetAttr("name").AsString()+"="+p.GetAttr("ip").AsString())
	}
	return pods
}

// setPodStatus writes status through the status subresource, as a kubelet or the
// scheduler would.
func setPodStatus(ctx context.Context, c kubernetes.Interface, ns, name string, status corev1.PodStatus) error {
	pod, err := c.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	pod.Status = status
	_, err = c.CoreV1().Pods(ns).UpdateStatus(ctx, pod, metav1.UpdateOptions{})
	return err
}

// createEvent records an event about pod name at time at, as a kubelet would.
func createEvent(ctx context.Context, c kubernetes.Interface, ns, name, reason, msg string, at time.Time) error {
	pod, err := c.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	ts := metav1.NewTime(at)
	_, err = c.CoreV1().Events(ns).Create(ctx, &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{GenerateName: name + ".", Namespace: ns},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: name, UID: pod.UID, APIVersion: "v1"},
		Reason:         reason,
		Message:        msg,
		Type:           corev1.EventTypeWarning,
		Source:         corev1.EventSource{Component: "kubelet"},
		FirstTimestamp: ts,
		LastTimestamp:  ts,
		Count:          1,
	}, metav1.CreateOptions{})
	return err
}

// testPodsWhy checks that a pod that is not Ready is reported with what holds it
// up: a waiting container's reason, the scheduler's, or else its last event.
func testPodsWhy(t *testing.T, s *kubetest.Server) {
	c := s.Clientset(t)
	ctx := t.Context()
	createNamespace(t, s, "why")
	pods := func(sel string) *WaitReady {
		return kubeWait(s, WaitReady{Kind: "pods", Namespace: "why", Selector: sel, WaitTimeout: shortWait})
	}
	waiting := func(reason, msg string, restarts int32) corev1.ContainerStatus {
		return corev1.ContainerStatus{Name: "main", Image: "busybox", RestartCount: restarts,
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: msg}}}
	}

	check(t, createPod(ctx, c, "why", "pull-0", "pull", ""))
	check(t, setPodStatus(ctx, c, "why", "pull-0", corev1.PodStatus{Phase: corev1.PodPending,
		ContainerStatuses: []corev1.ContainerStatus{waiting("ImagePullBackOff", `Back-off pulling image "busybox:nope"`, 0)}}))
	wantTimeout(t, pods("app=pull"), `0/1 pods Ready (pull-0: Pending, main ImagePullBackOff: Back-off pulling image "busybox:nope")`)

	check(t, createPod(ctx, c, "why", "crash-0", "crash", "10.244.1.10"))
	check(t, setPodStatus(ctx, c, "why", "crash-0", corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.244.1.10",
		Conditions:        []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}},
		ContainerStatuses: []corev1.ContainerStatus{waiting("CrashLoopBackOff", "back-off 40s restarting failed container=main", 3)}}))
	wantTimeout(t, pods("app=crash"), "0/1 pods Ready (crash-0: Running, not Ready, main CrashLoopBackOff (restarted 3 times): back-off 40s restarting failed container=main)")

	check(t, createPod(ctx, c, "why", "sched-0", "sched", ""))
	check(t, setPodStatus(ctx, c, "why", "sched-0", corev1.PodStatus{Phase: corev1.PodPending,
		Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable",
			Message: "0/3 nodes are available: 3 Insufficient cpu."}}}))
	wantTimeout(t, pods("app=sched"), "0/1 pods Ready (sched-0: Pending, Unschedulable: 0/3 nodes are available: 3 Insufficient cpu.)")

	// Without a reason in the status, the pod's latest event says what happened.
	check(t, createPod(ctx, c, "why", "mount-0", "mount", ""))
	now := time.Now()
	check(t, createEvent(ctx, c, "why", "mount-0", "Scheduled", "Successfully assigned why/mount-0 to node1", now.Add(-time.Minute)))
	check(t, createEvent(ctx, c, "why", "mount-0", "FailedMount", `MountVolume.SetUp failed for volume "config" : configmap "web" not found`, now))
	wantTimeout(t, pods("app=mount"), `0/1 pods Ready (mount-0: Pending, last event FailedMount: MountVolume.SetUp failed for volume "config" : configmap "web" not found)`)

	// The progress line names the reason too, and the wait ends when it clears.
	runChanging(t, kubeWait(s, WaitReady{Kind: "pods", Namespace: "why", Selector: "app=pull"}),
		`0/1 pods Ready (pull-0: Pending, main ImagePullBackOff: Back-off pulling image "busybox:nope")`, func() error {
			return setPodRunning(ctx, c, "why", "pull-0", "10.244.1.11", corev1.ConditionTrue)
		})
}

func testPods(t *testing.T, s *kubetest.Server) {
	c := s.Clientset(t)
	ctx := t.Context()
	createNamespace(t, s, "pods")
	pods := func(w WaitReady) *WaitReady { w.Kind, w.Namespace = "pods", "pods"; return kubeWait(s, w) }

	wantTimeout(t, pods(WaitReady{Selector: "app=web", WaitTimeout: shortWait}), "no pods, want at least 1")

	check(t, createPod(ctx, c, "pods", "web-1", "web", "10.244.0.11"))
	check(t, createPod(ctx, c, "pods", "web-0", "web", ""))
	check(t, createPod(ctx, c, "pods", "other-0", "other", ""))
	wantTimeout(t, pods(WaitReady{Selector: "app=web", WaitTimeout: shortWait}), "1/2 pods Ready (web-0: Pending)")
	wantTimeout(t, pods(WaitReady{WaitTimeout: shortWait}), "1/3 pods Ready (other-0: Pending, web-0: Pending)")

	check(t, setPodRunning(ctx, c, "pods", "web-0", "10.244.0.10", corev1.ConditionFalse))
	wantTimeout(t, pods(WaitReady{Selector: "app=web", WaitTimeout: shortWait}), "1/2 pods Ready (web-0: Running, not Ready)")

	out := runChanging(t, pods(WaitReady{Selector: "app in (web)"}), "1/2 pods Ready (web-0: Running, not Ready)", func() error {
		return setPodRunning(ctx, c, "pods", "web-0", "10.244.0.10", corev1.ConditionTrue)
	})
	if got, want := outPods(t, out), []string{"web-0=10.244.0.10", "web-1=10.244.0.11"}; !slices.Equal(got, want) {
		t.Errorf("pods = %q, want %q", got, want)
	}
	if got, want := outStrings(t, out, "pod_ips"), []string{"10.244.0.10", "10.244.0.11"}; !slices.Equal(got, want) {
		t.Errorf("pod_ips = %q, want %q", got, want)
	}

	three := 3
	wantTimeout(t, pods(WaitReady{Selector: "app=web", MinCount: &three, WaitTimeout: shortWait}), "2/2 pods Ready, want at least 3")

	zero := 0
	out, _, err := run(ctx, t, pods(WaitReady{Selector: "app=none", MinCount: &zero}))
	check(t, err)
	if got := outPods(t, out); len(got) != 0 {
		t.Errorf("pods = %q, want none", got)
	}
}
