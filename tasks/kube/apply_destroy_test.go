package kube

import (
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flowdev/flow/tasks"
	"github.com/flowdev/flow/tasks/kube/kubetest"
	"github.com/flowdev/flow/tasks/taskstest"
)

func init() {
	applyServerTests = append(applyServerTests, serverTest{"apply/destroy", testApplyDestroy})
}

const destroyDoc = `apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  namespace: apply-destroy
data:
  color: blue
---
apiVersion: v1
kind: Namespace
metadata:
  name: apply-destroy
`

// testApplyDestroy: Destroy deletes what the run applied, the namespace last, from
// the recorded objects or, without them, from the manifests; again, it finds them gone.
func testApplyDestroy(t *testing.T, s *kubetest.Server) {
	task := &Apply{Content: destroyDoc, Kubeconfig: s.Kubeconfig}
	out, _ := mustRun(t, task)
	checkPrinted(t, destroyApply(t, task, out),
		"deleted v1 ConfigMap apply-destroy/settings",
		"deleted v1 Namespace apply-destroy")
	if _, err := s.Dynamic(t).Resource(configMaps).Namespace("apply-destroy").Get(t.Context(), "settings", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("config map after destroy: %v", err)
	}
	// Without a namespace controller the namespace stays Terminating.
	ns, err := s.Dynamic(t).Resource(namespaces).Get(t.Context(), "apply-destroy", metav1.GetOptions{})
	if err == nil && ns.GetDeletionTimestamp() == nil {
		t.Error("namespace is not being deleted")
	}
	printed := destroyApply(t, task, nil)
	if !strings.Contains(printed, "v1 ConfigMap apply-destroy/settings already absent") {
		t.Errorf("second destroy:\n%s", printed)
	}
}

func destroyApply(t *testing.T, task *Apply, recorded tasks.Outputs) string {
	t.Helper()
	env, buf := taskstest.NewEnv(t)
	if err := task.Destroy(t.Context(), env, recorded); err != nil {
		t.Fatalf("Destroy() = %v; printed:\n%s", err, buf.String())
	}
	return buf.String()
}
