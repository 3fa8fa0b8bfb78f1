package kube

import (
	"context"
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/flowdev/flow/tasks"
	"github.com/flowdev/flow/tasks/taskstest"
	"github.com/zclconf/go-cty/cty"
)

func TestRegister(t *testing.T) {
	r := tasks.NewRegistry()
	if err := Register(r); err != nil {
		t.Fatalf("Register: %v", err)
	}
	vars := map[string]cty.Value{
		"lxd_exec":   cty.ObjectVal(map[string]cty.Value{"microk8s_config": cty.ObjectVal(map[string]cty.Value{"stdout": cty.StringVal("apiVersion: v1")})}),
		"kubeconfig": cty.ObjectVal(map[string]cty.Value{"member1": cty.ObjectVal(map[string]cty.Value{"path": cty.StringVal("/root/member1.config")})}),
	}
	for name, outputs := range map[string]map[string]cty.Type{
		"kubeconfig": {"path": cty.String, "server": cty.String, "context": cty.String},
		"k8s_apply":  {"objects": cty.List(objectRefType)},
	} {
		typ, ok := r.Lookup(name)
		if !ok {
			t.Fatalf("type %q not registered", name)
		}
		taskstest.CheckType(t, *typ, outputs)
		taskstest.CheckExample(t, *typ, vars)
	}
	if err := Register(r); err == nil {
		t.Error("second Register succeeded, want duplicate error")
	}
}

// The connection attributes say what every Kubernetes task says (struct tags
// cannot use the constants).
func TestConnectionDocs(t *testing.T) {
	st := reflect.TypeOf(Apply{})
	for field, want := range map[string]string{"Kubeconfig": KubeconfigDoc, "Context": ContextDoc} {
		f, _ := st.FieldByName(field)
		if got := f.Tag.Get("doc"); got != want {
			t.Errorf("Apply.%s doc = %q, want %q", field, got, want)
		}
	}
}

func TestValidateKubeconfig(t *testing.T) {
	no := false
	taskstest.CheckValidate(t, []taskstest.ValidateCase{
		{Name: "source", Task: &Kubeconfig{Source: "/root/.kube/config", Path: "/tmp/x"}},
		{Name: "content, all set", Task: &Kubeconfig{Content: "apiVersion: v1", Path: "x", Context: "microk8s", Server: "https://127.0.0.1:16441",
			ClusterName: "m1", ContextName: "m1", UserName: "m1", Minify: &no}},
		{Name: "http server", Task: &Kubeconfig{Source: "a", Path: "b", Server: "http://localhost:8080"}},
		{Name: "neither", Task: &Kubeconfig{Path: "x"}, Attr: "source", Msg: "one of source or content is required (an empty content counts as none)"},
		{Name: "both", Task: &Kubeconfig{Source: "a", Content: "b", Path: "x"}, Attr: "content", Msg: "mutually exclusive"},
		{Name: "no path", Task: &Kubeconfig{Source: "a"}, Attr: "path", Msg: "must not be empty"},
		{Name: "server without scheme", Task: &Kubeconfig{Source: "a", Path: "b", Server: "127.0.0.1:16441"}, Attr: "server", Msg: "must start with https:// or http://"},
		{Name: "server ftp", Task: &Kubeconfig{Source: "a", Path: "b", Server: "ftp://host"}, Attr: "server", Msg: "must start with https:// or http://"},
		{Name: "server without host", Task: &Kubeconfig{Source: "a", Path: "b", Server: "https:///x"}, Attr: "server", Msg: "has no host"},
		{Name: "server unparsable", Task: &Kubeconfig{Source: "a", Path: "b", Server: "https://[::1"}, Attr: "server", Msg: "is not a URL"},
	})
}

func TestValidateApply(t *testing.T) {
	empty, long, flow := "", strings.Repeat("m", 129), "flow"
	taskstest.CheckValidate(t, []taskstest.ValidateCase{
		{Name: "files", Task: &Apply{Files: []string{"manifests"}}},
		{Name: "content, all set", Task: &Apply{Content: "x", Files: []string{"a.yaml"}, Namespace: "web", FieldManager: &flow, Force: true, CRDTimeout: "2m", Kubeconfig: "k", Context: "c"}},
		{Name: "nothing", Task: &Apply{}, Attr: "files", Msg: "one of files or content is required"},
		{Name: "empty files", Task: &Apply{Files: []string{}}, Attr: "files", Msg: "one of files or content is required"},
		{Name: "empty path", Task: &Apply{Files: []string{"a", ""}}, Attr: "files", Msg: "must not be empty"},
		{Name: "bad namespace", Task: &Apply{Content: "x", Namespace: "Web_1"}, Attr: "namespace", Msg: `"Web_1" is not a valid namespace`},
		{Name: "empty field_manager", Task: &Apply{Content: "x", FieldManager: &empty}, Attr: "field_manager", Msg: "1 to 128 characters"},
		{Name: "long field_manager", Task: &Apply{Content: "x", FieldManager: &long}, Attr: "field_manager", Msg: "1 to 128 characters"},
		{Name: "bad crd_timeout", Task: &Apply{Content: "x", CRDTimeout: "soon"}, Attr: "crd_timeout", Msg: "not a duration"},
		{Name: "zero crd_timeout", Task: &Apply{Content: "x", CRDTimeout: "0s"}, Attr: "crd_timeout", Msg: "must be a positive duration"},
	})
}

// Manifest errors need no server: they name the document and never quote it.
func TestReadManifestErrors(t *testing.T) {
	for _, c := range []struct{ name, content, msg string }{
		{"yaml syntax", "apiVersion: v1\nkind: ConfigMap\n  data: [\n", "content document 1: yaml: "},
		{"scalar document", "---\njust text\n", "content document 1: not an object"},
		{"no kind", "apiVersion: v1\nmetadata: {name: x}\n", "content document 1: apiVersion and kind are required"},
		{"no name", "# comment\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {}\n", `content document 2: apiVersion "v1" kind "ConfigMap": metadata.name is required`},
		{"bad apiVersion", "apiVersion: a/b/c\nkind: X\nmetadata: {name: x}\n", `apiVersion "a/b/c" is not GROUP/VERSION or VERSION`},
		{"list item", "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: ok}\n- 3\n", "content document 1 item 2: not an object"},
		{"mapping as a key", "apiVersion: v1\nkind: Secret\nstringData:\n  {password: hunter2-secret}: x\n", "content document 1: yaml: invalid map key"},
		{"wrong tag", "apiVersion: v1\nkind: Secret\nstringData: {password: !!int hunter2-secret}\n", "content document 1: yaml: cannot decode"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := readManifests(nil, c.content)
			if err == nil || !strings.Contains(err.Error(), c.msg) {
				t.Errorf("readManifests() = %v, want %q", err, c.msg)
			}
			if err != nil && strings.Contains(err.Error(), "hunter2") {
				t.Errorf("readManifests() = %q quotes the content", err)
			}
		})
	}
	ms, err := readManifests(nil, "# only a comment\n---\n---\napiVersion: v1\nkind: List\nitems: []\n")
	if err != nil || len(ms) != 0 {
		t.Errorf("readManifests() = %d manifests, %v; want none", len(ms), err)
	}
}

// A cancelled run stops before it reads or connects to anything.
func TestRunCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	path := filepath.Join(t.TempDir(), "k.config")
	for _, task := range []tasks.Task{
		&Kubeconfig{Source: "/nonexistent", Path: path},
		&Apply{Files: []string{"/nonexistent"}, Kubeconfig: "/nonexistent"},
	} {
		env, _ := taskstest.NewEnv(t)
		if _, err := task.Run(ctx, env); !errors.Is(err, context.Canceled) {
			t.Errorf("%T.Run() = %v, want context.Canceled", task, err)
		}
	}
}
