package karmada

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/flowdev/flow/tasks/taskstest"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// A stale Cluster whose karmadactl unjoin fails is deleted by the task itself
// before it joins again (here a join that fails, to see the order).
func (s servers) testJoinStaleUnjoinFails(t *testing.T) {
	const name = "member-stale"
	c := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster",
		"metadata": map[string]any{"name": name},
		"spec":     map[string]any{"apiEndpoint": s.member.URL, "syncMode": "Push", "id": "bogus"},
	}}
	if _, err := s.karmada.Dynamic(t).Resource(clusters).Create(t.Context(), c, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	bin, record := fakeKarmadactl(t, "v1.13.0", map[string]string{
		"unjoin": "echo 'error: member unreachable' >&2; exit 1",
		"join":   "echo 'error: boom' >&2; exit 1",
	})
	env, buf := taskstest.NewEnv(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	_, err := (&Join{Karmadactl: bin, Cluster: name, Kubeconfig: s.karmada.Kubeconfig, ClusterKubeconfig: s.member.Kubeconfig}).Run(ctx, env)
	if err == nil || !strings.Contains(err.Error(), `karmadactl join "member-stale"`) {
		t.Errorf("err = %v, want the join failure", err)
	}
	for _, line := range []string{"cluster member-stale is stale (id bogus, the member's is now ", "karmadactl unjoin failed (", "); deleting cluster member-stale"} {
		if !strings.Contains(buf.String(), line) {
			t.Errorf("printed:\n%s\nwant %q", buf, line)
		}
	}
	if got := strings.Join(subcommands(t, record), " "); got != "version unjoin join" {
		t.Errorf("karmadactl calls = %q, want version unjoin join", got)
	}
	if want := "unjoin member-stale --kubeconfig=" + s.karmada.Kubeconfig + " --cluster-kubeconfig=" + s.member.Kubeconfig + " --cluster-context=kubetest"; calls(t, record)[1] != want {
		t.Errorf("unjoin call = %q, want %q", calls(t, record)[1], want)
	}
	if _, err := s.karmada.Dynamic(t).Resource(clusters).Get(t.Context(), name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("stale cluster after the run: %v, want not found", err)
	}
}
