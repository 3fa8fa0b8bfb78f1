package kube

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/flowdev/flow/internal/ci"
	"github.com/flowdev/flow/tasks"
	"github.com/flowdev/flow/tasks/kube/kubetest"
	"github.com/flowdev/flow/tasks/taskstest"
	"github.com/zclconf/go-cty/cty"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

var applyServerTests = []serverTest{
	{"apply/multi-document and re-apply", testApplyMultiDoc},
	{"apply/CRD and custom resource in one content", testApplyCRD},
	{"apply/files and directories", testApplyFiles},
	{"apply/unknown kind", testApplyUnknownKind},
	{"apply/namespace defaulting", testApplyNamespaceDefault},
	{"apply/conflict and force", testApplyConflict},
	{"apply/crd_timeout", testApplyCRDTimeout},
	{"apply/Karmada CRDs", testApplyKarmadaCRDs},
	{"apply/server warnings", testApplyWarnings},
}

var (
	configMaps  = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	deployments = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	namespaces  = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
)

// multiDoc lists the Namespace last: it must still be applied first.
const multiDoc = `# a comment-only document counts but holds nothing
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  namespace: apply-multi
data:
  color: blue
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: nginx
  namespace: apply-multi
spec:
  replicas: 2
  selector:
    matchLabels: {app: nginx}
  template:
    metadata:
      labels: {app: nginx}
    spec:
      containers:
      - name: nginx
        image: nginx:1.27
---
apiVersion: v1
kind: Namespace
metadata:
  name: apply-multi
`

// objectState is what a no-op apply must leave alone.
type objectState struct {
	resourceVersion string
	managedFields   []metav1.ManagedFieldsEntry
}

func stateOf(t *testing.T, s *kubetest.Server, gvr schema.GroupVersionResource, ns, name string) objectState {
	t.Helper()
	u, err := s.Dynamic(t).Resource(gvr).Namespace(ns).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get %s %s/%s: %v", gvr.Resource, ns, name, err)
	}
	return objectState{u.GetResourceVersion(), u.GetManagedFields()}
}

func checkPrinted(t *testing.T, printed string, want ...string) {
	t.Helper()
	if got := strings.Split(strings.TrimSpace(printed), "\n"); !reflect.DeepEqual(got, want) {
		t.Errorf("printed:\n%s\nwant:\n%s", printed, strings.Join(want, "\n"))
	}
}

func refs(t *testing.T, out tasks.Outputs) []string {
	t.Helper()
	var got []string
	for _, v := range out["objects"].AsValueSlice() {
		m := v.AsValueMap()
		got = append(got, strings.Join([]string{m["api_version"].AsString(), m["kind"].AsString(), m["namespace"].AsString(), m["name"].AsString()}, " "))
	}
	if !out["objects"].Type().Equals(cty.List(objectRefType)) {
		t.Errorf("objects has type %s", out["objects"].Type().FriendlyName())
	}
	return got
}

func testApplyMultiDoc(t *testing.T, s *kubetest.Server) {
	task := &Apply{Content: multiDoc, Kubeconfig: s.Kubeconfig}
	out, printed := mustRun(t, task)
	checkPrinted(t, printed,
		"created v1 Namespace apply-multi",
		"created v1 ConfigMap apply-multi/settings",
		"created apps/v1 Deployment apply-multi/nginx")
	wantRefs := []string{"v1 Namespace  apply-multi", "v1 ConfigMap apply-multi settings", "apps/v1 Deployment apply-multi nginx"}
	if got := refs(t, out); !reflect.DeepEqual(got, wantRefs) {
		t.Errorf("objects = %q, want %q", got, wantRefs)
	}
	before := map[string]objectState{
		"ns":  stateOf(t, s, namespaces, "", "apply-multi"),
		"cm":  stateOf(t, s, configMaps, "apply-multi", "settings"),
		"dep": stateOf(t, s, deployments, "apply-multi", "nginx"),
	}

	out, printed = mustRun(t, task)
	checkPrinted(t, printed,
		"unchanged v1 Namespace apply-multi",
		"unchanged v1 ConfigMap apply-multi/settings",
		"unchanged apps/v1 Deployment apply-multi/nginx")
	if got := refs(t, out); !reflect.DeepEqual(got, wantRefs) {
		t.Errorf("re-apply objects = %q, want %q", got, wantRefs)
	}
	after := map[string]objectState{
		"ns":  stateOf(t, s, namespaces, "", "apply-multi"),
		"cm":  stateOf(t, s, configMaps, "apply-multi", "settings"),
		"dep": stateOf(t, s, deployments, "apply-multi", "nginx"),
	}
	if !reflect.DeepEqual(before, after) {
		t.Errorf("re-apply changed objects:\nbefore %+v\nafter  %+v", before, after)
	}

	task.Content = strings.Replace(multiDoc, "color: blue", "color: green", 1)
	_, printed = mustRun(t, task)
	checkPrinted(t, printed,
		"unchanged v1 Namespace apply-multi",
		"configured v1 ConfigMap apply-multi/settings",
		"unchanged apps/v1 Deployment apply-multi/nginx")
}

// widgetCR comes before its CRD in the text, as a templated bundle may have it.
const widgetCR = `apiVersion: example.com/v1
kind: Widget
metadata:
  name: w1
  namespace: default
spec:
  size: 3
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, listKind: WidgetList}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
`

func testApplyCRD(t *testing.T, s *kubetest.Server) {
	task := &Apply{Content: widgetCR, Kubeconfig: s.Kubeconfig, Context: "kubetest"}
	out, printed := mustRun(t, task)
	if !strings.Contains(printed, "created apiextensions.k8s.io/v1 CustomResourceDefinition widgets.example.com\n") ||
		!strings.HasSuffix(printed, "created example.com/v1 Widget default/w1\n") {
		t.Errorf("printed:\n%s", printed)
	}
	want := []string{"apiextensions.k8s.io/v1 CustomResourceDefinition  widgets.example.com", "example.com/v1 Widget default w1"}
	if got := refs(t, out); !reflect.DeepEqual(got, want) {
		t.Errorf("objects = %q, want %q", got, want)
	}
	w, err := s.Dynamic(t).Resource(schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}).
		Namespace("default").Get(t.Context(), "w1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if size, _, _ := unstructured.NestedInt64(w.Object, "spec", "size"); size != 3 {
		t.Errorf("widget spec.size = %d, want 3", size)
	}
	_, printed = mustRun(t, task)
	checkPrinted(t, printed,
		"unchanged apiextensions.k8s.io/v1 CustomResourceDefinition widgets.example.com",
		"unchanged example.com/v1 Widget default/w1")
}

func testApplyFiles(t *testing.T, s *kubetest.Server) {
	dir := t.TempDir()
	write := func(name, content string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cm := func(name string) string {
		return "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: " + name + ", namespace: apply-files}\n"
	}
	write("b.yaml", cm("b"))
	write("a.yml", cm("a1")+"---\n"+cm("a2"))
	write("c.json", `{"apiVersion": "v1", "kind": "List", "items": [
	  {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c1", "namespace": "apply-files"}, "data": {"n": "1"}},
	  {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c2", "namespace": "apply-files"}}]}`)
	write("README.md", "not a manifest")
	ns := filepath.Join(t.TempDir(), "ns.yaml")
	if err := os.WriteFile(ns, []byte("apiVersion: v1\nkind: Namespace\nmetadata: {name: apply-files}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, printed := mustRun(t, &Apply{Files: []string{dir, ns}, Kubeconfig: s.Kubeconfig})
	checkPrinted(t, printed,
		"created v1 Namespace apply-files",
		"created v1 ConfigMap apply-files/a1",
		"created v1 ConfigMap apply-files/a2",
		"created v1 ConfigMap apply-files/b",
		"created v1 ConfigMap apply-files/c1",
		"created v1 ConfigMap apply-files/c2")

	write("d.yaml", cm("d")+"---\napiVersion: example.com/v1\nkind: Gizmo\nmetadata: {name: g1}\n")
	_, _, err := runTask(t, &Apply{Files: []string{dir}, Kubeconfig: s.Kubeconfig})
	want := `file "` + filepath.Join(dir, "d.yaml") + `" document 2: apiVersion "example.com/v1" kind "Gizmo" name "g1": unknown kind`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Run() = %v, want %q", err, want)
	}
	_, _, err = runTask(t, &Apply{Files: []string{filepath.Join(dir, "nosuch.yaml")}, Kubeconfig: s.Kubeconfig})
	if want := `read file "` + filepath.Join(dir, "nosuch.yaml") + `": no such file or directory`; err == nil || err.Error() != want {
		t.Errorf("Run() = %v, want %q", err, want)
	}
}

func testApplyUnknownKind(t *testing.T, s *kubetest.Server) {
	content := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: before-unknown}\n---\n" +
		"apiVersion: example.com/v1\nkind: Gadget\nmetadata: {name: g1}\n"
	_, printed, err := runTask(t, &Apply{Content: content, Kubeconfig: s.Kubeconfig})
	want := `content document 2: apiVersion "example.com/v1" kind "Gadget" name "g1": unknown kind: the server does not serve it and no CustomResourceDefinition in the manifests defines it`
	if err == nil || err.Error() != want {
		t.Fatalf("Run() = %v, want %q", err, want)
	}
	if printed != "" {
		t.Errorf("printed %q; nothing may be applied when a kind is unknown", printed)
	}
	_, err = s.Dynamic(t).Resource(configMaps).Namespace("default").Get(t.Context(), "before-unknown", metav1.GetOptions{})
	if err == nil {
		t.Error("the ConfigMap before the unknown kind was applied")
	}
}

func testApplyNamespaceDefault(t *testing.T, s *kubetest.Server) {
	content := `apiVersion: v1
kind: Namespace
metadata: {name: apply-defaulted}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: defaulted}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: explicit, namespace: default}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: apply-defaulted-reader, namespace: ignored}
rules: []
`
	out, printed := mustRun(t, &Apply{Content: content, Namespace: "apply-defaulted", Kubeconfig: s.Kubeconfig})
	checkPrinted(t, printed,
		"created v1 Namespace apply-defaulted",
		"created v1 ConfigMap apply-defaulted/defaulted",
		"created v1 ConfigMap default/explicit",
		"created rbac.authorization.k8s.io/v1 ClusterRole apply-defaulted-reader")
	want := []string{
		"v1 Namespace  apply-defaulted",
		"v1 ConfigMap apply-defaulted defaulted",
		"v1 ConfigMap default explicit",
		"rbac.authorization.k8s.io/v1 ClusterRole  apply-defaulted-reader",
	}
	if got := refs(t, out); !reflect.DeepEqual(got, want) {
		t.Errorf("objects = %q, want %q", got, want)
	}

	// Without the attribute, namespaced objects land in "default".
	_, printed = mustRun(t, &Apply{Content: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: apply-in-default}\n", Kubeconfig: s.Kubeconfig})
	checkPrinted(t, printed, "created v1 ConfigMap default/apply-in-default")
}

func testApplyConflict(t *testing.T, s *kubetest.Server) {
	other := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "contested", "namespace": "default"},
		"data":     map[string]any{"owner": "other"},
	}}
	_, err := s.Dynamic(t).Resource(configMaps).Namespace("default").
		Apply(t.Context(), "contested", other, metav1.ApplyOptions{FieldManager: "other-tool"})
	if err != nil {
		t.Fatal(err)
	}
	content := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: contested}\ndata: {owner: flow}\n"
	_, _, err = runTask(t, &Apply{Content: content, Kubeconfig: s.Kubeconfig})
	if err == nil || !strings.Contains(err.Error(), `apply v1 ConfigMap default/contested (content document 1): Apply failed with 1 conflict: conflict with "other-tool"`) ||
		!strings.HasSuffix(err.Error(), "set force = true to take these fields over") {
		t.Fatalf("Run() = %v, want a conflict with other-tool and a hint at force", err)
	}

	manager := "flow-test"
	_, printed := mustRun(t, &Apply{Content: content, Force: true, FieldManager: &manager, Kubeconfig: s.Kubeconfig})
	checkPrinted(t, printed, "configured v1 ConfigMap default/contested")
	cm, err := s.Dynamic(t).Resource(configMaps).Namespace("default").Get(t.Context(), "contested", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if owner, _, _ := unstructured.NestedString(cm.Object, "data", "owner"); owner != "flow" {
		t.Errorf("data.owner = %q, want flow", owner)
	}
	if m := ownerOf(t, cm, "owner"); m != manager {
		t.Errorf(".data.owner is managed by %q, want %q", m, manager)
	}
}

// ownerOf returns the field manager that owns .data.KEY of cm.
func ownerOf(t *testing.T, cm *unstructured.Unstructured, key string) string {
	t.Helper()
	for _, mf := range cm.GetManagedFields() {
		var fields map[string]map[string]any
		if err := json.Unmarshal(mf.FieldsV1.Raw, &fields); err != nil {
			t.Fatal(err)
		}
		if _, ok := fields["f:data"]["f:"+key]; ok {
			return mf.Manager
		}
	}
	return ""
}

func testApplyCRDTimeout(t *testing.T, s *kubetest.Server) {
	crd := strings.NewReplacer("widgets", "sprockets", "widget", "sprocket", "Widget", "Sprocket").Replace(widgetCR[strings.Index(widgetCR, "apiVersion: apiextensions"):])
	_, _, err := runTask(t, &Apply{Content: crd, CRDTimeout: "1ns", Kubeconfig: s.Kubeconfig})
	want := "CustomResourceDefinition sprockets.example.com not established after 1ns (last: not read yet)"
	if err == nil || err.Error() != want {
		t.Fatalf("Run() = %v, want %q", err, want)
	}
}

// Karmada's CRDs are large, real-world manifests, applied from directories as the
// lab does; applying them again must change nothing.
func testApplyKarmadaCRDs(t *testing.T, s *kubetest.Server) {
	base := filepath.Join(kubetest.BinDir(), "karmada-crds-"+kubetest.KarmadaVersion)
	dirs, err := os.ReadDir(base)
	if err != nil {
		if ci.Enabled() {
			t.Fatal(err)
		}
		t.Skipf("Karmada CRDs missing (run scripts/k8s-bins.sh): %v", err)
	}
	var files []string
	for _, d := range dirs {
		files = append(files, filepath.Join(base, d.Name()))
	}
	task := &Apply{Files: files, Kubeconfig: s.Kubeconfig}
	out, printed := mustRun(t, task)
	n := len(out["objects"].AsValueSlice())
	if n < 10 || strings.Count(printed, "created apiextensions.k8s.io/v1 CustomResourceDefinition ") != n {
		t.Errorf("applied %d objects; printed:\n%s", n, printed)
	}
	_, printed = mustRun(t, task)
	if strings.Count(printed, "unchanged apiextensions.k8s.io/v1 CustomResourceDefinition ") != n {
		t.Errorf("re-apply printed:\n%s", printed)
	}
}

// The kinds are looked up through discovery, which takes no context: a server that
// never answers must not hold a cancelled run.
func TestApplyDiscoveryUnanswered(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) }) // runs first, so that Close does not wait
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["silent"] = &clientcmdapi.Cluster{Server: srv.URL}
	cfg.AuthInfos["silent"] = &clientcmdapi.AuthInfo{}
	cfg.Contexts["silent"] = &clientcmdapi.Context{Cluster: "silent", AuthInfo: "silent"}
	cfg.CurrentContext = "silent"
	kubeconfig := filepath.Join(t.TempDir(), "silent.kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, kubeconfig); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	env, _ := taskstest.NewEnv(t)
	start := time.Now()
	_, err := (&Apply{Content: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n", Kubeconfig: kubeconfig}).Run(ctx, env)
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("cancelled Run took %v, want it to end at once", took)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Run() = %v, want context.DeadlineExceeded", err)
	}
}

// Warnings of the server (deprecated labels here) are the user's to see: they go to
// the task's stderr, not around the engine to the process's.
func testApplyWarnings(t *testing.T, s *kubetest.Server) {
	content := `apiVersion: apps/v1
kind: Deployment
metadata: {name: warned}
spec:
  selector: {matchLabels: {app: warned}}
  template:
    metadata: {labels: {app: warned}}
    spec:
      nodeSelector: {beta.kubernetes.io/arch: amd64}
      containers: [{name: c, image: nginx}]
`
	_, printed := mustRun(t, &Apply{Content: content, Kubeconfig: s.Kubeconfig})
	checkPrinted(t, printed,
		`Warning: spec.template.spec.nodeSelector[beta.kubernetes.io/arch]: deprecated since v1.14; use "kubernetes.io/arch" instead`,
		"created apps/v1 Deployment default/warned")
}
