package wait

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/flowdev/flow/tasks/kube/kubetest"
)

var crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// createCRD applies a minimal CRD for gvr (version v1alpha1 or whatever gvr says)
// of kind, with a status subresource and any fields, and waits until it is served.
func createCRD(ctx context.Context, c dynamic.Interface, gvr schema.GroupVersionResource, kind string, namespaced bool) error {
	scope := "Cluster"
	if namespaced {
		scope = "Namespaced"
	}
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1",
		"kind":       "CustomResourceDefinition",
		"metadata":   map[string]any{"name": gvr.Resource + "." + gvr.Group},
		"spec": map[string]any{
			"group": gvr.Group,
			"scope": scope,
			"names": map[string]any{"plural": gvr.Resource, "singular": strings.ToLower(kind), "kind": kind, "listKind": kind + "List"},
			"versions": []any{map[string]any{
				"name": gvr.Version, "served": true, "storage": true,
				"schema":       map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
				"subresources": map[string]any{"status": map[string]any{}},
			}},
		},
	}}
	if _, err := c.Resource(crdResource).Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create CRD %s: %w", crd.GetName(), err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := c.Resource(gvr).List(ctx, metav1.ListOptions{})
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("CRD %s not served after 30s: %w", crd.GetName(), err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

var clusterCRD struct {
	once sync.Once
	err  error
}

// ensureClusterCRD applies the Cluster CRD once per server.
func ensureClusterCRD(t *testing.T, s *kubetest.Server) {
	t.Helper()
	clusterCRD.once.Do(func() {
		clusterCRD.err = createCRD(context.Background(), s.Dynamic(t), clusterResource, "Cluster", false)
	})
	check(t, clusterCRD.err)
}

// conditions is a status.conditions list of one condition.
func conditions(typ, status, reason, message string) []any {
	return []any{map[string]any{
		"type": typ, "status": status, "reason": reason, "message": message,
		"lastTransitionTime": "2025-01-01T00:00:00Z",
	}}
}

// createObject creates a custom object and, when status is not nil, writes it through
// the status subresource.
func createObject(ctx context.Context, c dynamic.ResourceInterface, gvr schema.GroupVersionResource, kind, name string, status map[string]any) error {
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": gvr.GroupVersion().String(), "kind": kind,
		"metadata": map[string]any{"name": name},
		"spec":     map[string]any{},
	}}
	created, err := c.Create(ctx, obj, metav1.CreateOptions{})
	if err != nil || status == nil {
		return err
	}
	created.Object["status"] = status
	_, err = c.UpdateStatus(ctx, created, metav1.UpdateOptions{})
	return err
}

// setStatus replaces an object's status.
func setStatus(ctx context.Context, c dynamic.ResourceInterface, name string, status map[string]any) error {
	obj, err := c.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	obj.Object["status"] = status
	_, err = c.UpdateStatus(ctx, obj, metav1.UpdateOptions{})
	return err
}

func clusterReady(status, message string) map[string]any {
	reason := "ClusterReady"
	if status != "True" {
		reason = "ClusterNotReachable"
	}
	return map[string]any{"conditions": conditions("Ready", status, reason, message)}
}

func testKarmadaClusters(t *testing.T, s *kubetest.Server) {
	ctx := t.Context()
	clusters := func(names ...string) *WaitReady {
		return kubeWait(s, WaitReady{Kind: "karmada_clusters", Clusters: names, WaitTimeout: shortWait})
	}

	t.Run("without Karmada", func(t *testing.T) {
		wantTimeout(t, clusters("member1"), "error: the server could not find the requested resource")
	})

	ensureClusterCRD(t, s)
	c := s.Dynamic(t).Resource(clusterResource)
	check(t, createObject(ctx, c, clusterResource, "Cluster", "member1", clusterReady("True", "cluster is healthy and ready to accept workloads")))
	check(t, createObject(ctx, c, clusterResource, "Cluster", "member3", clusterReady("False", "cluster is not reachable")))
	check(t, createObject(ctx, c, clusterResource, "Cluster", "member4", nil))
	check(t, createObject(ctx, c, clusterResource, "Cluster", "member5", map[string]any{"conditions": conditions("Ready", "Unknown", "", "")}))

	tests := []struct {
		names    []string
		wantLast string
	}{
		{[]string{"member1", "member2", "member3"}, "member2 not found; member3 Ready=False (cluster is not reachable)"},
		{[]string{"member4", "member5", "member1"}, "member4 has no Ready condition; member5 Ready=Unknown"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.names, ","), func(t *testing.T) { wantTimeout(t, clusters(tt.names...), tt.wantLast) })
	}

	t.Run("become Ready", func(t *testing.T) {
		w := clusters("member3", "member1", "member2")
		w.WaitTimeout = "10s"
		out := runChanging(t, w, "member3 Ready=False (cluster is not reachable); member2 not found", func() error {
			if err := createObject(ctx, c, clusterResource, "Cluster", "member2", clusterReady("True", "")); err != nil {
				return err
			}
			return setStatus(ctx, c, "member3", clusterReady("True", ""))
		})
		if got, want := outStrings(t, out, "clusters"), []string{"member3", "member1", "member2"}; !slices.Equal(got, want) {
			t.Errorf("clusters = %q, want %q", got, want)
		}
	})
}
