package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/flowdev/flow/tasks/kube"
	"github.com/flowdev/flow/tasks/kube/kubetest"
)

// Karmada on the Kubernetes lab (flows/k8s-lab/karmada.hcl): what TestK8sLabKillAndResume
// checks after each trial, the kill inside a task, and the failover drill.

var (
	k8sLabClusterModes     = map[string]string{"member1": "Push", "member2": "Push", "member3": "Pull"}
	karmadaComponents      = []string{"etcd", "karmada-apiserver", "karmada-aggregated-apiserver", "kube-controller-manager", "karmada-controller-manager", "karmada-scheduler", "karmada-webhook"}
	karmadaDrillToleration = 30 * time.Second // flows/k8s-lab/vars/failover-drill.hcl
)

// killInside starts flow with args, waits until the task at address runs, lets it run a
// seeded moment shorter than maxDelay, SIGKILLs flow, and resumes the run to the end. The
// kill must land while the task still runs: that is what the trial is for.
func killInside(t *testing.T, tag, root, state string, args []string, address string, maxDelay time.Duration, rng *rand.Rand, timeout time.Duration) {
	t.Helper()
	p := start(t, tag, root, args...)
	running := func(d statusDoc) bool { return d.byAddress()[address].Status == "running" }
	waitStatus(t, tag, root, state, timeout, address+" to run", func(d statusDoc) bool {
		if d.Status != "running" && p.exited() {
			t.Fatalf("the run ended (%s) before %s ran\n%s", d.Status, address, p.describe())
		}
		return running(d)
	})
	delay := time.Duration(rng.Int64N(int64(maxDelay)))
	time.Sleep(delay)
	at := waitStatus(t, tag, root, state, timeout, "the status", func(statusDoc) bool { return true })
	p.killGroup()
	p.wait(10 * time.Second)
	if !running(at) {
		t.Errorf("the kill %v after %s started landed after it ended (%s)", delay, address, at.byAddress()[address].Status)
	}
	t.Logf("SIGKILL %v after %s started, while it ran", delay, address)
	if r := runFlow(t, tag, root, timeout, "resume", "--state", state); r.code != 0 {
		t.Fatalf("resume exited %d\n%s", r.code, r.desc)
	}
}

// checkKarmadaOnK8sLab asserts Karmada through its own API server and the clusters':
// every component Ready in the host cluster, each member a Ready Cluster in its mode,
// karmada-agent running in the pull member, nginx propagated to every member, and each
// member reached at one endpoint, the same from here and from Karmada (checkClusterProxy).
func checkKarmadaOnK8sLab(t *testing.T, configDir string) {
	t.Helper()
	ctx := context.Background()
	host := clientset(t, filepath.Join(configDir, "karmada-host.config"))
	for _, c := range karmadaComponents {
		ready, want, err := workloadReady(ctx, host, "karmada-system", c)
		if err != nil || ready < want || want == 0 {
			t.Errorf("karmada component %s: %d/%d ready (%v)", c, ready, want, err)
		}
	}
	cfg, err := kube.RESTConfig(filepath.Join(configDir, "karmada", "karmada-apiserver.config"), "")
	if err != nil {
		t.Fatal(err)
	}
	dyn := dynamic.NewForConfigOrDie(cfg)
	for member, mode := range k8sLabClusterModes {
		cluster, err := dyn.Resource(karmadaClusters).Get(ctx, member, metav1.GetOptions{})
		if err != nil {
			t.Errorf("cluster %s in Karmada: %v", member, err)
			continue
		}
		if !conditionTrue(cluster, "Ready") {
			t.Errorf("cluster %s is not Ready: %v", member, cluster.Object["status"])
		}
		if got, _, _ := unstructured.NestedString(cluster.Object, "spec", "syncMode"); got != mode {
			t.Errorf("cluster %s has sync mode %q, want %q", member, got, mode)
		}
		m := clientset(t, filepath.Join(configDir, member+".config"))
		d, err := m.AppsV1().Deployments("default").Get(ctx, "nginx", metav1.GetOptions{})
		switch {
		case err != nil:
			t.Errorf("nginx in %s: %v", member, err)
		case d.Status.AvailableReplicas < 1 || !karmadaManaged(d.Labels) && !karmadaManaged(d.Annotations):
			t.Errorf("nginx in %s: %d available, labels %v", member, d.Status.AvailableReplicas, d.Labels)
		}
		if mode == "Pull" {
			if ready, want, err := workloadReady(ctx, m, "karmada-system", "karmada-agent"); err != nil || ready < want || want == 0 {
				t.Errorf("karmada-agent in %s: %d/%d ready (%v)", member, ready, want, err)
			}
		}
		checkClusterProxy(t, cfg, cluster, filepath.Join(configDir, member+".config"))
	}
}

// checkClusterProxy asserts that a member has one endpoint: the Cluster's apiEndpoint is
// the server of the member's kubeconfig on this machine, and Karmada's cluster proxy
// (karmada-aggregated-apiserver dialing that endpoint) answers with the member's own
// kube-system Namespace, push or pull.
func checkClusterProxy(t *testing.T, karmada *rest.Config, cluster *unstructured.Unstructured, kubeconfig string) {
	t.Helper()
	ctx := context.Background()
	member := cluster.GetName()
	cfg, err := kube.RESTConfig(kubeconfig, "")
	if err != nil {
		t.Fatal(err)
	}
	if endpoint, _, _ := unstructured.NestedString(cluster.Object, "spec", "apiEndpoint"); endpoint != cfg.Host {
		t.Errorf("cluster %s: apiEndpoint %q, but its kubeconfig's server is %q", member, endpoint, cfg.Host)
	}
	direct, err := kubernetes.NewForConfigOrDie(cfg).CoreV1().Namespaces().Get(ctx, "kube-system", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("kube-system in %s: %v", member, err)
	}
	raw, err := kube.RawClient(karmada)
	if err != nil {
		t.Fatal(err)
	}
	path := "/apis/cluster.karmada.io/v1alpha1/clusters/" + member + "/proxy/api/v1/namespaces/kube-system"
	body, err := raw.Get().AbsPath(path).DoRaw(ctx)
	if err != nil {
		t.Errorf("Karmada's cluster proxy to %s: %v: %s", member, err, body)
		return
	}
	var ns metav1.ObjectMeta
	var doc struct{ Metadata *metav1.ObjectMeta }
	doc.Metadata = &ns
	if err := json.Unmarshal(body, &doc); err != nil || ns.UID != direct.UID {
		t.Errorf("Karmada's cluster proxy to %s: kube-system uid %q (%v), want %q", member, ns.UID, err, direct.UID)
	}
}

func clientset(t *testing.T, kubeconfig string) kubernetes.Interface {
	t.Helper()
	cfg, err := kube.RESTConfig(kubeconfig, "")
	if err != nil {
		t.Fatal(err)
	}
	return kubernetes.NewForConfigOrDie(cfg)
}

// workloadReady returns the ready and wanted replicas of the Deployment or StatefulSet name.
func workloadReady(ctx context.Context, c kubernetes.Interface, ns, name string) (ready, want int32, err error) {
	if d, err := c.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{}); err == nil {
		return d.Status.ReadyReplicas, *d.Spec.Replicas, nil
	}
	s, err := c.AppsV1().StatefulSets(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return 0, 0, err
	}
	return s.Status.ReadyReplicas, *s.Spec.Replicas, nil
}

var resourceBindings = schema.GroupVersionResource{Group: "work.karmada.io", Version: "v1alpha2", Resource: "resourcebindings"}

// checkFailoverDrill runs flows/failover-drill.hcl on the lab as a user would, with the
// lab's variables: the replicas start in member1, leave it within the toleration plus 60 s
// of the drain, and are back in member1 after it is restored.
func checkFailoverDrill(t *testing.T, tag, root, configDir string) {
	t.Helper()
	state := filepath.Join(t.TempDir(), "drill.db")
	r := runFlow(t, tag, root, 15*time.Minute, "run", filepath.Join(root, "flows", "failover-drill.hcl"),
		"--var-file", filepath.Join(root, "flows", "k8s-lab", "vars", "failover-drill.hcl"),
		"--var", "config_dir="+configDir, "--var", "karmada_data="+filepath.Join(configDir, "karmada"),
		"--var", "karmadactl_path="+kubetest.Binary(t, "karmadactl"), "--state", state)
	if r.code != 0 {
		t.Fatalf("failover-drill exited %d\n%s", r.code, r.desc)
	}
	raw := waitStatus(t, tag, root, state, time.Minute, "the drill's outputs", func(statusDoc) bool { return true }).Outputs
	var out struct {
		Before, During, After map[string]int
		MovedOffAfter         float64
	}
	for name, dst := range map[string]any{"placement_before": &out.Before, "placement_during": &out.During,
		"placement_after": &out.After, "moved_off_after": &out.MovedOffAfter} {
		var v struct{ Value json.RawMessage }
		if err := json.Unmarshal(raw[name], &v); err != nil || json.Unmarshal(v.Value, dst) != nil {
			t.Fatalf("output %s = %s (%v)", name, raw[name], err)
		}
	}
	t.Logf("placement before %v, during %v, after %v; moved off %.1f s after the drain", out.Before, out.During, out.After, out.MovedOffAfter)
	if out.Before["member1"] == 0 || out.During["member1"] != 0 || len(out.During) == 0 || out.After["member1"] == 0 {
		t.Errorf("placement before %v, during %v, after %v: want member1, then others, then member1 again", out.Before, out.During, out.After)
	}
	if d := time.Duration(out.MovedOffAfter * float64(time.Second)); d > karmadaDrillToleration+time.Minute {
		t.Errorf("the replicas left member1 %v after the drain, want within %v", d, karmadaDrillToleration+time.Minute)
	}
	ctx := context.Background()
	cfg, err := kube.RESTConfig(filepath.Join(configDir, "karmada", "karmada-apiserver.config"), "")
	if err != nil {
		t.Fatal(err)
	}
	b, err := dynamic.NewForConfigOrDie(cfg).Resource(resourceBindings).Namespace("default").Get(ctx, "failover-drill-deployment", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	clusters, _, _ := unstructured.NestedSlice(b.Object, "spec", "clusters")
	if got := fmt.Sprint(clusters); !strings.Contains(got, "member1") {
		t.Errorf("the binding places the replicas in %s after the drill, want member1", got)
	}
}
