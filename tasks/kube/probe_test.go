package kube

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flowdev/flow/tasks/kube/kubetest"
	"github.com/flowdev/flow/tasks/taskstest"
)

func init() {
	applyServerTests = append(applyServerTests, serverTest{"apply/probe", testApplyProbe})
}

// testApplyProbe: the refresh of a k8s_apply finds its objects there, then reports
// the one deleted behind its back (issue 20).
func testApplyProbe(t *testing.T, s *kubetest.Server) {
	doc := strings.ReplaceAll(destroyDoc, "apply-destroy", "apply-probe")
	task := &Apply{Content: doc, Kubeconfig: s.Kubeconfig}
	out, _ := mustRun(t, task)
	env, _ := taskstest.NewEnv(t)
	if got, err := task.Probe(t.Context(), env, out); err != nil || got != "" {
		t.Fatalf("Probe right after the apply = %q, %v; want no drift", got, err)
	}
	if err := s.Dynamic(t).Resource(configMaps).Namespace("apply-probe").Delete(t.Context(), "settings", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := task.Probe(t.Context(), env, out)
	if want := "v1 ConfigMap apply-probe/settings is gone"; err != nil || got != want {
		t.Errorf("Probe after the delete = %q, %v; want %q", got, err, want)
	}
}

// TestKubeconfigProbe: the refresh of a kubeconfig task reports its file removed or
// edited, and nothing while it holds what the task writes.
func TestKubeconfigProbe(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.config")
	task := &Kubeconfig{Source: "testdata/probe.kubeconfig", Path: path}
	mustRun(t, task)
	env, _ := taskstest.NewEnv(t)
	for _, step := range []struct {
		change func()
		want   string
	}{
		{change: func() {}, want: ""},
		{change: func() { _ = os.WriteFile(path, []byte("edited"), 0o600) }, want: path + " does not hold what the task writes"},
		{change: func() { _ = os.Remove(path) }, want: path + " is gone"},
	} {
		step.change()
		if got, err := task.Probe(t.Context(), env, nil); err != nil || got != step.want {
			t.Errorf("Probe = %q, %v; want %q", got, err, step.want)
		}
	}
}
