package e2e

import (
	"context"
	"net"
	"path/filepath"
	"slices"
	"testing"
	"time"

	lxdclient "github.com/canonical/lxd/client"
	"github.com/canonical/lxd/shared/api"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/flowdev/flow/internal/lxdtest"
	"github.com/flowdev/flow/tasks/kube"
	"github.com/flowdev/flow/tasks/kube/kubetest"
)

// The Kubernetes lab over two LXD hosts (issue 29, make demo-2host): karmada-host, member1
// and the registries on the main daemon (host a, 127.0.0.1), member2 and member3 on host B,
// the second real daemon on 127.0.0.2:8443 (internal/lxdtest). The flow copies the member
// image to B; B's members pull from the registry on A by A's address, member3's
// karmada-agent reaches Karmada's API server on A, and A reaches B's API servers on
// 127.0.0.2. One trial, SIGKILLed at a seeded moment and resumed: nothing created twice on
// either host, every node Ready, a Deployment the flow never saw propagated by Karmada
// into member2, then flow destroy leaves nothing of the lab on either host.

var (
	twoHostsOnA = []string{"karmada-host", "lab-registry", "lab-upstream", "member1"}
	twoHostsOnB = []string{"member2", "member3"}
	// Each member's API server and web Service, on its host's address.
	twoHostsAPI = map[string]string{"member1": "127.0.0.1:16441", "member2": "127.0.0.2:16442", "member3": "127.0.0.2:16444"}
	twoHostsWeb = map[string]string{"member1": "127.0.0.1:18441", "member2": "127.0.0.2:18442", "member3": "127.0.0.2:18444"}
)

func TestK8sLabTwoHosts(t *testing.T) {
	srvA := requireLXD(t)
	for _, bin := range []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler", "kube-proxy", "kubelet"} {
		kubetest.Binary(t, bin)
	}
	hb := lxdtest.StartHostB(t)
	srvB, err := lxdclient.ConnectLXDUnix(filepath.Join(hb.Dir, "unix.socket"), nil)
	if err != nil {
		t.Fatalf("connect to host B: %v", err)
	}
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	configDir := filepath.Join(t.TempDir(), "k8s-lab")
	tag := newTag(t)
	clearLabs(t, tag, root)
	clearHostB(t, hb)
	logComponentLogsOnFailure(t, []string{"karmada-host", "member1"})

	rng := seededRand(t, 0x2b0)
	onA, onB := watchCreations(t, srvA, twoHostsOnA), watchCreations(t, srvB, twoHostsOnB)
	state := filepath.Join(t.TempDir(), "k8s-lab-2host.db")
	args := []string{"run", filepath.Join(root, "flows", "k8s-lab"), "--var-file", filepath.Join(root, "flows", "k8s-lab", "vars", "two-hosts.hcl"),
		"--var", "config_dir=" + configDir, "--state", state}
	untilTheKillLands(t, 1, func() bool {
		return killAndResume(t, tag, root, state, args, rng, k8sLabTimeout)
	}, func() {
		destroyLab(t, tag, root, state)
		onA.reset()
		onB.reset()
	})
	checkInstancesOn(t, "host a", srvA, twoHostsOnA)
	checkInstancesOn(t, "host B", srvB, twoHostsOnB)
	checkCreatedOnce(t, 1, onA.reset(), twoHostsOnA)
	checkCreatedOnce(t, 1, onB.reset(), twoHostsOnB)
	checkTwoHostMembers(t, configDir)
	checkKarmadaOnK8sLab(t, configDir) // Clusters Ready in their modes, nginx in all three, the agent on B
	checkPropagatedTo(t, configDir, "member2", "unseen-"+tag)

	destroyLab(t, tag, root, state)
	checkK8sLabGone(t, srvA, configDir)
	checkHostBClean(t, srvB)
}

// checkInstancesOn asserts that each of names is an instance of srv.
func checkInstancesOn(t *testing.T, host string, srv lxdclient.InstanceServer, names []string) {
	t.Helper()
	have, err := srv.GetInstanceNames(api.InstanceTypeAny)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if !slices.Contains(have, n) {
			t.Errorf("instance %s is not on %s (it has %v)", n, host, have)
		}
	}
}

// checkTwoHostMembers: each member's kubeconfig names its host's address, its node is
// Ready, and its web Service answers there.
func checkTwoHostMembers(t *testing.T, configDir string) {
	t.Helper()
	for member, addr := range twoHostsAPI {
		checkMemberServed(t, configDir, member, addr, twoHostsWeb[member])
	}
}

var (
	deploymentsResource  = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	propagationsResource = schema.GroupVersionResource{Group: "policy.karmada.io", Version: "v1alpha1", Resource: "propagationpolicies"}
)

// checkPropagatedTo creates, through Karmada's API server, a Deployment the flow never
// declared and a PropagationPolicy that sends it to member only, and waits until it is
// available in member (on host B): Karmada on host a reaches a cluster on another host.
func checkPropagatedTo(t *testing.T, configDir, member, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cfg, err := kube.RESTConfig(filepath.Join(configDir, "karmada", "karmada-apiserver.config"), "")
	if err != nil {
		t.Fatal(err)
	}
	karmada := dynamic.NewForConfigOrDie(cfg)
	deploy := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": name, "namespace": "default"},
		"spec": map[string]any{
			"replicas": int64(1),
			"selector": map[string]any{"matchLabels": map[string]any{"app": name}},
			"template": map[string]any{
				"metadata": map[string]any{"labels": map[string]any{"app": name}},
				"spec": map[string]any{"containers": []any{map[string]any{
					"name": "web", "image": "localhost:32000/nginx:1.27"}}},
			},
		},
	}}
	policy := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
		"metadata": map[string]any{"name": name, "namespace": "default"},
		"spec": map[string]any{
			"resourceSelectors": []any{map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "name": name}},
			"placement":         map[string]any{"clusterAffinity": map[string]any{"clusterNames": []any{member}}},
		},
	}}
	if _, err := karmada.Resource(propagationsResource).Namespace("default").Create(ctx, policy, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create PropagationPolicy %s: %v", name, err)
	}
	if _, err := karmada.Resource(deploymentsResource).Namespace("default").Create(ctx, deploy, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create Deployment %s in Karmada: %v", name, err)
	}
	defer func() {
		_ = karmada.Resource(deploymentsResource).Namespace("default").Delete(context.Background(), name, metav1.DeleteOptions{})
		_ = karmada.Resource(propagationsResource).Namespace("default").Delete(context.Background(), name, metav1.DeleteOptions{})
	}()
	m := clientset(t, filepath.Join(configDir, member+".config"))
	for {
		d, err := m.AppsV1().Deployments("default").Get(ctx, name, metav1.GetOptions{})
		if err == nil && d.Status.AvailableReplicas >= 1 {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("Deployment %s never became available in %s through Karmada (last: %v)", name, member, err)
		case <-time.After(2 * time.Second):
		}
	}
}

// clearHostB removes what an interrupted earlier test left of the lab on host B.
func clearHostB(t *testing.T, hb lxdtest.HostB) {
	t.Helper()
	for _, n := range twoHostsOnB {
		_, _ = hb.Lxc("delete", "--force", n)
	}
	_, _ = hb.Lxc("image", "alias", "delete", "flow-member")
	_, _ = hb.Lxc("profile", "delete", "flow-member")
}

// checkHostBClean: after flow destroy, host B has no instance, profile or image alias of
// the lab, and nothing listens on its lab ports.
func checkHostBClean(t *testing.T, srv lxdclient.InstanceServer) {
	t.Helper()
	names, err := srv.GetInstanceNames(api.InstanceTypeAny)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if slices.Contains(twoHostsOnB, n) {
			t.Errorf("instance %s survived the teardown on host B", n)
		}
	}
	if _, _, err := srv.GetProfile("flow-member"); err == nil {
		t.Errorf("profile flow-member survived the teardown on host B")
	}
	if _, _, err := srv.GetImageAlias("flow-member"); err == nil {
		t.Errorf("image alias flow-member survived the teardown on host B")
	}
	for _, addr := range []string{twoHostsAPI["member2"], twoHostsAPI["member3"], twoHostsWeb["member2"], twoHostsWeb["member3"]} {
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			t.Errorf("%s still accepts connections after the teardown", addr)
		}
	}
}
