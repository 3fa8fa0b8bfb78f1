package kube

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flowdev/flow/tasks"
	"github.com/flowdev/flow/tasks/kube/kubetest"
	"github.com/flowdev/flow/tasks/taskstest"
	"github.com/zclconf/go-cty/cty"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

var kubeconfigServerTests = []serverTest{
	{"kubeconfig/from file", testKubeconfigFromFile},
	{"kubeconfig/from content with server and names", testKubeconfigFromContent},
	{"kubeconfig/without minify", testKubeconfigNoMinify},
}

// microk8sSource is what `microk8s config` prints on a member: the server's
// credentials, but the server URL as seen inside the member, which does not
// answer here. A second context must not survive minify.
func microk8sSource(t *testing.T, s *kubetest.Server) *clientcmdapi.Config {
	t.Helper()
	cfg := s.KubeconfigAPI("microk8s")
	cfg.Clusters["microk8s"].Server = "https://127.0.0.1:1"
	cfg.Clusters["other"] = &clientcmdapi.Cluster{Server: "https://127.0.0.2:6443"}
	cfg.AuthInfos["other"] = &clientcmdapi.AuthInfo{Token: "other-token"}
	cfg.Contexts["other"] = &clientcmdapi.Context{Cluster: "other", AuthInfo: "other"}
	return cfg
}

func writeSource(t *testing.T, cfg *clientcmdapi.Config) []byte {
	t.Helper()
	b, err := clientcmd.Write(*cfg)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// listNamespaces makes a real request with the client kubeconfig and context give.
func listNamespaces(t *testing.T, kubeconfig, context string) {
	t.Helper()
	cfg, err := RESTConfig(kubeconfig, context)
	if err != nil {
		t.Fatal(err)
	}
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CoreV1().Namespaces().List(t.Context(), metav1.ListOptions{}); err != nil {
		t.Fatalf("list namespaces through %s: %v", kubeconfig, err)
	}
}

func checkOutputs(t *testing.T, out tasks.Outputs, path, server, context string) {
	t.Helper()
	want := tasks.Outputs{"path": cty.StringVal(path), "server": cty.StringVal(server), "context": cty.StringVal(context)}
	for k, v := range want {
		if !out[k].RawEquals(v) {
			t.Errorf("output %s = %#v, want %#v", k, out[k], v)
		}
	}
}

func checkMode(t *testing.T, path string, want os.FileMode) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != want {
		t.Errorf("%s has mode %o, want %o", path, fi.Mode().Perm(), want)
	}
}

func testKubeconfigFromFile(t *testing.T, s *kubetest.Server) {
	path := filepath.Join(t.TempDir(), "new", "dir", "kubetest.config")
	task := &Kubeconfig{Source: s.Kubeconfig, Path: path}
	out, printed := mustRun(t, task)
	checkOutputs(t, out, path, s.URL, "kubetest")
	if !strings.Contains(printed, "kubeconfig "+path+" written") || strings.Contains(printed, s.Token) {
		t.Errorf("printed %q; want a written line and no token", printed)
	}
	checkMode(t, path, 0o600)
	checkMode(t, filepath.Dir(path), 0o700)
	listNamespaces(t, path, "")

	// Backdate the file so that a rewrite could not go unnoticed.
	old := time.Now().Add(-time.Hour).Truncate(time.Second)
	if err := os.Chtimes(path, old, old); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	out, printed = mustRun(t, task)
	checkOutputs(t, out, path, s.URL, "kubetest")
	if want := "kubeconfig " + path + " already present\n"; printed != want {
		t.Errorf("second run printed %q, want %q", printed, want)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if !fi.ModTime().Equal(old) {
		t.Errorf("second run changed the mtime from %v to %v", old, fi.ModTime())
	}
	checkMode(t, path, 0o600)
	if entries, _ := os.ReadDir(filepath.Dir(path)); len(entries) != 1 {
		t.Errorf("directory holds %d entries, want only the kubeconfig (no temporary files)", len(entries))
	}
}

func testKubeconfigFromContent(t *testing.T, s *kubetest.Server) {
	path := filepath.Join(t.TempDir(), "member1.config")
	task := &Kubeconfig{
		Content: string(writeSource(t, microk8sSource(t, s))), Path: path, Server: s.URL,
		ClusterName: "member1", ContextName: "member1", UserName: "member1-admin",
	}
	out, printed := mustRun(t, task)
	checkOutputs(t, out, path, s.URL, "member1")
	if strings.Contains(printed, s.Token) {
		t.Errorf("printed the token: %q", printed)
	}
	cfg, err := clientcmd.LoadFromFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Clusters) != 1 || len(cfg.AuthInfos) != 1 || len(cfg.Contexts) != 1 {
		t.Errorf("minified file has %d clusters, %d users, %d contexts; want one each", len(cfg.Clusters), len(cfg.AuthInfos), len(cfg.Contexts))
	}
	c := cfg.Contexts["member1"]
	if cfg.CurrentContext != "member1" || c == nil || c.Cluster != "member1" || c.AuthInfo != "member1-admin" {
		t.Fatalf("current-context %q, context member1 = %+v; want it current, pointing at member1 and member1-admin", cfg.CurrentContext, c)
	}
	if got := cfg.Clusters["member1"].Server; got != s.URL {
		t.Errorf("server = %q, want %q", got, s.URL)
	}
	checkMode(t, path, 0o600)
	listNamespaces(t, path, "member1")

	_, printed = mustRun(t, task)
	if !strings.Contains(printed, "already present") {
		t.Errorf("second run printed %q, want already present", printed)
	}
}

func testKubeconfigNoMinify(t *testing.T, s *kubetest.Server) {
	src := filepath.Join(t.TempDir(), "source.config")
	if err := os.WriteFile(src, writeSource(t, microk8sSource(t, s)), 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "all.config")
	no := false
	out, _ := mustRun(t, &Kubeconfig{Source: src, Path: path, Context: "microk8s", Server: s.URL, ClusterName: "member1", Minify: &no})
	checkOutputs(t, out, path, s.URL, "microk8s")
	cfg, err := clientcmd.LoadFromFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Contexts) != 2 || cfg.Contexts["other"] == nil || cfg.Clusters["microk8s"] != nil {
		t.Errorf("contexts %v, clusters %v: want both contexts and cluster microk8s renamed", keys(cfg.Contexts), keys(cfg.Clusters))
	}
	if got := cfg.Contexts["microk8s"].Cluster; got != "member1" {
		t.Errorf("context microk8s points at cluster %q, want member1", got)
	}
	if got := cfg.Clusters["other"].Server; got != "https://127.0.0.2:6443" {
		t.Errorf("other cluster's server = %q; only the chosen context's cluster may change", got)
	}
	listNamespaces(t, path, "")
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// A kubeconfig that cannot be parsed fails every Kubernetes task: the error names
// the file and never quotes it, which holds credentials.
func TestRESTConfigErrors(t *testing.T) {
	const secret = "s3cr3t-t0ken-value"
	dir := t.TempDir()
	for _, c := range []struct{ name, content, msg string }{
		{"mapping as a key", "users:\n- {token: " + secret + "}: 1\n", "yaml: invalid map key"},
		{"wrong tag", "users:\n- name: u\n  user: {token: !!int " + secret + "}\n", "yaml: cannot decode"},
		{"unterminated", "users:\n- name: u\n  user: {token: \"" + secret + "\n", "yaml: "},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "-")+".kubeconfig")
			if err := os.WriteFile(path, []byte(c.content), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := RESTConfig(path, "")
			if err == nil || !strings.HasPrefix(err.Error(), "load "+path+": ") || !strings.Contains(err.Error(), c.msg) {
				t.Errorf("RESTConfig() = %v, want %q...%q", err, "load "+path+": ", c.msg)
			}
			if err != nil && strings.Contains(err.Error(), secret) {
				t.Errorf("the token leaked: %q", err)
			}
		})
	}
}

// Errors that need no server: they name the file written, and never quote the
// source, which holds credentials.
func TestKubeconfigRunErrors(t *testing.T) {
	const secret = "s3cr3t-t0ken-value"
	good := `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "https://127.0.0.1:16443"}
users:
- name: u
  user: {token: ` + secret + `}
contexts:
- name: microk8s
  context: {cluster: c, user: u}
- name: dangling
  context: {cluster: nosuch, user: u}
current-context: microk8s
`
	dir := t.TempDir()
	taken := strings.Replace(good, "- name: c\n", "- name: c\n  cluster: {server: \"https://127.0.0.1:1\"}\n- name: taken\n", 1)
	for _, c := range []struct {
		name string
		task *Kubeconfig
		msg  string
	}{
		{"missing context", &Kubeconfig{Content: good, Context: "member1"}, `context "member1" not found in source`},
		{"dangling cluster", &Kubeconfig{Content: good, Context: "dangling"}, `context "dangling": cluster "nosuch" not found in source`},
		{"no current context", &Kubeconfig{Content: strings.Replace(good, "current-context: microk8s", "", 1)}, "no current-context; set context"},
		{"unparsable content", &Kubeconfig{Content: "users:\n- name: u\n  user: {token: " + secret + "\n"}, "parse content: "},
		{"content of wrong type", &Kubeconfig{Content: `{"users": [{"name": "u", "user": {"token": ["` + secret + `"]}}]}`}, "parse content: "},
		{"mapping as a key", &Kubeconfig{Content: "users:\n- {token: " + secret + "}: 1\n"}, "parse content: yaml: invalid map key"},
		{"sequence as a key", &Kubeconfig{Content: "[" + secret + "]: 1\n"}, "parse content: yaml: invalid map key"},
		{"wrong tag", &Kubeconfig{Content: "users:\n- name: u\n  user: {token: !!int " + secret + "}\n"}, "parse content: yaml: cannot decode"},
		{"missing source", &Kubeconfig{Source: filepath.Join(dir, "nosuch")}, `source "` + filepath.Join(dir, "nosuch") + `" does not exist`},
		{"rename onto existing", &Kubeconfig{Content: taken, ClusterName: "taken", Minify: new(bool)}, `rename cluster "c" to "taken": the source already has a cluster of that name`},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(dir, "member1.config")
			c.task.Path = path
			out, printed, err := runTask(t, c.task)
			if err == nil {
				t.Fatalf("Run() succeeded with outputs %v", out)
			}
			prefix := `kubeconfig "` + path + `": `
			if !strings.HasPrefix(err.Error(), prefix) || !strings.Contains(err.Error(), c.msg) {
				t.Errorf("Run() = %q, want %q...%q", err, prefix, c.msg)
			}
			if strings.Contains(err.Error(), secret) || strings.Contains(printed, secret) {
				t.Errorf("the token leaked: error %q, printed %q", err, printed)
			}
			if _, err := os.Stat(path); err == nil {
				t.Error("a failed run wrote the file")
			}
		})
	}
}

// Destroy removes the written file and says already absent the second time.
func TestKubeconfigDestroy(t *testing.T) {
	path := filepath.Join(t.TempDir(), "member1.config")
	if err := os.WriteFile(path, []byte("apiVersion: v1\nkind: Config\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	k := &Kubeconfig{Content: "x", Path: path}
	for _, want := range []string{"removed " + path, path + " already absent"} {
		env, buf := taskstest.NewEnv(t)
		if err := k.Destroy(t.Context(), env, nil); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(buf.String(), want) {
			t.Errorf("printed %q, want %q", buf, want)
		}
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("the kubeconfig survived: %v", err)
	}
}
