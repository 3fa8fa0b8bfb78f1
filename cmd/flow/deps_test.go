package main

import (
	"os/exec"
	"strings"
	"testing"
)

// linked lists the packages the flow binary links.
func linked(t *testing.T) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	return strings.Fields(string(out))
}

// TestNoTypedKubernetesClient keeps client-go's typed clientset, its scheme and
// the k8s.io/api types out of the binary: their package initialisation registers
// every built-in API type and was most of every command's start-up time
// (docs/performance.md). Kubernetes tasks use the dynamic client instead.
func TestNoTypedKubernetesClient(t *testing.T) {
	for _, pkg := range linked(t) {
		if pkg == "k8s.io/client-go/kubernetes" || strings.HasPrefix(pkg, "k8s.io/client-go/kubernetes/") ||
			strings.HasPrefix(pkg, "k8s.io/api/") || pkg == "k8s.io/client-go/discovery" {
			t.Errorf("cmd/flow links %s; use the dynamic client (tasks/kube.Mapper for discovery)", pkg)
		}
	}
}

// TestNoPluginHostLinked keeps gRPC, go-plugin and the plugin host out of flow: on
// this kernel every MB of code linked is a MB of every command's RSS, 4-6 MiB for
// these (docs/performance.md). flow-plugin-host links them; flow starts it only for
// a flow that declares a plugin (package plugin/bridge).
func TestNoPluginHostLinked(t *testing.T) {
	for _, pkg := range linked(t) {
		for _, banned := range []string{"google.golang.org/grpc", "github.com/hashicorp/go-plugin",
			"github.com/flowdev/flow/plugin/host", "github.com/flowdev/flow/plugin/sdk"} {
			if pkg == banned || strings.HasPrefix(pkg, banned+"/") {
				t.Errorf("cmd/flow links %s; the plugin host belongs in cmd/flow-plugin-host", pkg)
			}
		}
	}
}
