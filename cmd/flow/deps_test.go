package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestNoTypedKubernetesClient keeps client-go's typed clientset, its scheme and
// the k8s.io/api types out of the binary: their package initialisation registers
// every built-in API type and was most of every command's start-up time
// (docs/performance.md). Kubernetes tasks use the dynamic client instead.
func TestNoTypedKubernetesClient(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if pkg == "k8s.io/client-go/kubernetes" || strings.HasPrefix(pkg, "k8s.io/client-go/kubernetes/") ||
			strings.HasPrefix(pkg, "k8s.io/api/") || pkg == "k8s.io/client-go/discovery" {
			t.Errorf("cmd/flow links %s; use the dynamic client (tasks/kube.Mapper for discovery)", pkg)
		}
	}
}
