package kube

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flowdev/flow/tasks/kube/kubetest"
)

// TestApplyAcrossAPIServerRestart kills the real kube-apiserver, starts a
// k8s_apply while it is down and brings it back 3 s later, as a crash or an
// upgrade does: the apply retries the refused connections on its own (no retry
// block), says so once per retry, and creates each object once.
func TestApplyAcrossAPIServerRestart(t *testing.T) {
	s := kubetest.Start(t, kubetest.Options{})
	restarted := make(chan struct{})
	s.RestartAPIServer(t, 0) // proves the helper; the server is back within seconds
	go func() {
		defer close(restarted)
		s.RestartAPIServer(t, 3*time.Second)
	}()
	time.Sleep(200 * time.Millisecond) // the kill has happened; the apply meets a refusal
	out, printed := mustRun(t, &Apply{Kubeconfig: s.Kubeconfig, Content: `apiVersion: v1
kind: Namespace
metadata: {name: restart-apply}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: restart-apply}
data: {color: blue}
`})
	<-restarted
	if !strings.Contains(printed, "transient fault: connection refused; retry 1 in 250ms") {
		t.Errorf("no retry line for the refused connection; printed:\n%s", printed)
	}
	if n := len(out["objects"].AsValueSlice()); n != 2 {
		t.Errorf("%d objects applied, want 2", n)
	}
	cm, err := s.Clientset(t).CoreV1().ConfigMaps("restart-apply").Get(t.Context(), "settings", metav1.GetOptions{})
	if err != nil || cm.Data["color"] != "blue" {
		t.Fatalf("configmap after the restart: %v, %v", cm, err)
	}
	t.Logf("printed:\n%s", printed)
}
