package wait

import (
	"context"
	"testing"

	"github.com/zclconf/go-cty/cty"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/flowdev/flow/tasks"
	"github.com/flowdev/flow/tasks/kube"
	"github.com/flowdev/flow/tasks/kube/kubetest"
)

// targets is a spec.clusters list: cluster name, then replicas (below 0: unset, as
// Karmada writes it for a resource without replicas), repeated.
func targets(pairs ...any) []any {
	var list []any
	for i := 0; i < len(pairs); i += 2 {
		c := map[string]any{"name": pairs[i]}
		if n := pairs[i+1].(int); n >= 0 {
			c["replicas"] = int64(n)
		}
		list = append(list, c)
	}
	return list
}

// createBinding creates a ResourceBinding with spec.replicas (unset when 0) and
// spec.clusters (unset when nil).
func createBinding(ctx context.Context, c dynamic.ResourceInterface, name string, replicas int, clusters []any) error {
	spec := map[string]any{"resource": map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "name": name}}
	if replicas > 0 {
		spec["replicas"] = int64(replicas)
	}
	if clusters != nil {
		spec["clusters"] = clusters
	}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": kube.BindingResource.GroupVersion().String(), "kind": "ResourceBinding",
		"metadata": map[string]any{"name": name}, "spec": spec,
	}}
	_, err := c.Create(ctx, obj, metav1.CreateOptions{})
	return err
}

// setClusters replaces a binding's spec.clusters, as Karmada's scheduler does.
func setClusters(ctx context.Context, c dynamic.ResourceInterface, name string, clusters []any) error {
	obj, err := c.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if err := unstructured.SetNestedSlice(obj.Object, clusters, "spec", "clusters"); err != nil {
		return err
	}
	_, err = c.Update(ctx, obj, metav1.UpdateOptions{})
	return err
}

// wantPlacement checks the placement output against cluster=replicas pairs.
func wantPlacement(t *testing.T, out tasks.Outputs, want map[string]int64) {
	t.Helper()
	m := make(map[string]cty.Value, len(want))
	for name, n := range want {
		m[name] = cty.NumberIntVal(n)
	}
	if got := out["placement"]; !got.RawEquals(cty.MapVal(m)) {
		t.Errorf("placement = %#v, want %v", got, want)
	}
}

func testKarmadaPlacement(t *testing.T, s *kubetest.Server) {
	ctx := t.Context()
	placed := func(name string, present, absent []string) *WaitReady {
		return kubeWait(s, WaitReady{Kind: "karmada_placement", Namespace: "place", Name: name,
			PlacementPresent: present, PlacementAbsent: absent, WaitTimeout: shortWait})
	}
	list := func(names ...string) []string { return names }

	t.Run("without Karmada", func(t *testing.T) {
		wantTimeout(t, placed("web-deployment", nil, list("member1")), "error: the server could not find the requested resource")
	})

	createNamespace(t, s, "place")
	check(t, createCRD(ctx, s.Dynamic(t), kube.BindingResource, "ResourceBinding", true))
	c := s.Dynamic(t).Resource(kube.BindingResource).Namespace("place")
	check(t, createBinding(ctx, c, "web-deployment", 6, targets("member3", 2, "member1", 2, "member2", 2)))
	check(t, createBinding(ctx, c, "scaled-deployment", 3, targets("member1", 3, "member2", 0)))
	check(t, createBinding(ctx, c, "config-configmap", 0, targets("member1", -1, "member2", -1)))
	check(t, createBinding(ctx, c, "pending-deployment", 3, nil))

	t.Run("ready", func(t *testing.T) {
		tests := []struct {
			name string
			wait *WaitReady
			want map[string]int64
		}{
			{"present and absent", placed("web-deployment", list("member1", "member3"), list("member4")), map[string]int64{"member1": 2, "member2": 2, "member3": 2}},
			{"absent with 0 replicas", placed("scaled-deployment", nil, list("member2")), map[string]int64{"member1": 3, "member2": 0}},
			{"present without replicas", placed("config-configmap", list("member2"), nil), map[string]int64{"member1": 0, "member2": 0}},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				out, _, err := run(ctx, t, tt.wait)
				check(t, err)
				wantPlacement(t, out, tt.want)
			})
		}
	})

	tests := []struct {
		name     string
		wait     *WaitReady
		wantLast string
	}{
		{"no binding", placed("absent-deployment", list("member1"), nil), "no binding"},
		{"not scheduled yet", placed("pending-deployment", nil, list("member1")), "not scheduled yet"},
		{"absent still placed", placed("web-deployment", list("member2"), list("member1")), "member1=2 member2=2 member3=2"},
		{"present missing", placed("web-deployment", list("member1", "member4"), nil), "member1=2 member2=2 member3=2"},
		{"present with 0 replicas", placed("scaled-deployment", list("member2"), nil), "member1=3 member2=0"},
		{"absent without replicas", placed("config-configmap", nil, list("member1")), "member1=0 member2=0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { wantTimeout(t, tt.wait, tt.wantLast) })
	}

	// A failover drill: the scheduler moves the workload off a tainted member, then,
	// once the taint is gone, back onto it.
	t.Run("member leaves and returns", func(t *testing.T) {
		check(t, createBinding(ctx, c, "drill-deployment", 6, targets("member1", 2, "member2", 2, "member3", 2)))
		leave := placed("drill-deployment", list("member2", "member3"), list("member1"))
		leave.WaitTimeout = "10s"
		out := runChanging(t, leave, "member1=2 member2=2 member3=2", func() error {
			return setClusters(ctx, c, "drill-deployment", targets("member3", 3, "member2", 3))
		})
		wantPlacement(t, out, map[string]int64{"member2": 3, "member3": 3})

		back := placed("drill-deployment", list("member1"), nil)
		back.WaitTimeout = "10s"
		out = runChanging(t, back, "member2=3 member3=3", func() error {
			return setClusters(ctx, c, "drill-deployment", targets("member1", 1, "member2", 3, "member3", 2))
		})
		wantPlacement(t, out, map[string]int64{"member1": 1, "member2": 3, "member3": 2})
	})

	// A taint eviction: the member has left spec.clusters, but its old replicas run
	// until the new ones are healthy, and until then it still holds the workload.
	t.Run("member still evicted from", func(t *testing.T) {
		check(t, createBinding(ctx, c, "evicted-deployment", 2, targets("member2", 2)))
		check(t, setEvicting(ctx, c, "evicted-deployment", "member1"))
		leave := placed("evicted-deployment", list("member2"), list("member1"))
		leave.WaitTimeout = "10s"
		out := runChanging(t, leave, "member2=2 (evicting member1)", func() error {
			return setEvicting(ctx, c, "evicted-deployment")
		})
		wantPlacement(t, out, map[string]int64{"member2": 2})
	})
}

// setEvicting replaces a binding's spec.gracefulEvictionTasks with one task per cluster,
// as Karmada's taint manager adds them and its graceful eviction controller removes them.
func setEvicting(ctx context.Context, c dynamic.ResourceInterface, name string, clusters ...string) error {
	obj, err := c.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	tasks := []any{}
	for _, cluster := range clusters {
		tasks = append(tasks, map[string]any{"fromCluster": cluster, "reason": "TaintUntolerated", "producer": "TaintManager"})
	}
	if err := unstructured.SetNestedSlice(obj.Object, tasks, "spec", "gracefulEvictionTasks"); err != nil {
		return err
	}
	_, err = c.Update(ctx, obj, metav1.UpdateOptions{})
	return err
}
