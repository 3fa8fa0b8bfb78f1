package wait

import (
	"context"
	"slices"
	"testing"

	"github.com/zclconf/go-cty/cty"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/flowdev/flow/tasks/kube/kubetest"
)

// createNode creates a Node; a non-empty ready sets its Ready condition.
func createNode(ctx context.Context, c kubernetes.Interface, name string, ready corev1.ConditionStatus) error {
	_, err := c.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil || ready == "" {
		return err
	}
	return setNodeReady(ctx, c, name, ready)
}

// setNodeReady writes a node's Ready condition through the status subresource, as a
// kubelet does.
func setNodeReady(ctx context.Context, c kubernetes.Interface, name string, ready corev1.ConditionStatus) error {
	n, err := c.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: ready, Reason: "KubeletReady"}}
	_, err = c.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
	return err
}

func outStrings(t *testing.T, out map[string]cty.Value, name string) []string {
	t.Helper()
	v, ok := out[name]
	if !ok || !v.Type().Equals(cty.List(cty.String)) {
		t.Fatalf("output %q = %#v, want a list of strings", name, v)
	}
	ss := []string{}
	for _, e := range v.AsValueSlice() {
		ss = append(ss, e.AsString())
	}
	return ss
}

func testNodes(t *testing.T, s *kubetest.Server) {
	c := s.Clientset(t)
	ctx := t.Context()
	nodes := func(w WaitReady) *WaitReady { w.Kind = "nodes"; return kubeWait(s, w) }
	zero := 0

	wantTimeout(t, nodes(WaitReady{WaitTimeout: shortWait}), "no nodes, want at least 1")
	out, _, err := run(ctx, t, nodes(WaitReady{MinCount: &zero}))
	check(t, err)
	if got := outStrings(t, out, "nodes"); len(got) != 0 {
		t.Errorf("nodes = %q, want none", got)
	}

	check(t, createNode(ctx, c, "member1", corev1.ConditionTrue))
	check(t, createNode(ctx, c, "member2", corev1.ConditionFalse))
	wantTimeout(t, nodes(WaitReady{WaitTimeout: shortWait}), "1/2 nodes Ready (member2: NotReady)")

	out = runChanging(t, nodes(WaitReady{}), "1/2 nodes Ready (member2: NotReady)", func() error {
		return setNodeReady(ctx, c, "member2", corev1.ConditionTrue)
	})
	if got, want := outStrings(t, out, "nodes"), []string{"member1", "member2"}; !slices.Equal(got, want) {
		t.Errorf("nodes = %q, want %q", got, want)
	}

	three := 3
	wantTimeout(t, nodes(WaitReady{MinCount: &three, WaitTimeout: shortWait}), "2/2 nodes Ready, want at least 3")

	check(t, createNode(ctx, c, "member3", ""))
	check(t, createNode(ctx, c, "member4", corev1.ConditionUnknown))
	wantTimeout(t, nodes(WaitReady{MinCount: &three, WaitTimeout: shortWait}),
		"2/4 nodes Ready (member3: no Ready condition, member4: Ready=Unknown)")
}
