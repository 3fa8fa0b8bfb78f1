package wait

import (
	"context"
	"slices"
	"testing"

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
	pod, err := c.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	pod.Status = corev1.PodStatus{
		Phase:      corev1.PodRunning,
		PodIP:      ip,
		PodIPs:     []corev1.PodIP{{IP: ip}},
		Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: ready}},
	}
	_, err = c.CoreV1().Pods(ns).UpdateStatus(ctx, pod, metav1.UpdateOptions{})
	return err
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
