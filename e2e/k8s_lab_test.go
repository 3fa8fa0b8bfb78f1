package e2e

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	lxdclient "github.com/canonical/lxd/client"
	"github.com/canonical/lxd/shared/api"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/flowdev/flow/tasks/kube"
	"github.com/flowdev/flow/tasks/kube/kubetest"
)

// The Kubernetes lab (flows/k8s-lab) for real: members that are single-node clusters in
// LXD (containerd, kubelet, kube-proxy, CoreDNS), images built here and mirrored into the
// lab registry, workloads running, and Karmada installed by the real `karmadactl init` in
// a fourth cluster, two members joined in push mode and one registered in pull mode, nginx
// propagated to all three. Each trial starts from nothing, is SIGKILLed and resumed: the
// first inside `karmadactl init`, the second inside a `karmadactl join`, the third once or
// twice at seeded moments; then every node must be Ready, the web pods Running in every
// member and answering through kube-proxy, the Clusters Ready in their modes, nginx in
// every member, and no instance created twice. After the last trial the follow-on flows
// run on the lab as a user runs them (the failover drill, Prometheus through 9091, the
// Flask image imported into containerd and answering from its pod, k8s_job's Jobs in
// every member and through Karmada, killed and resumed: checkJobs), and the focused
// subset of Karmada's own e2e suite passes on it (checkKarmadaSuite). Between trials and at
// the end, flow destroy of the trial's state must leave nothing behind but the cached images.

const (
	k8sLabTimeout = 25 * time.Minute
	k8sLabTrials  = 3
)

var (
	k8sLabInstances = []string{"karmada-host", "lab-registry", "lab-upstream", "member1", "member2", "member3"}
	// The trials' kills: the first two inside these tasks, a seeded moment after each starts.
	k8sLabKillInside = []struct {
		address  string
		maxDelay time.Duration
	}{
		{"module.karmada.karmadactl_init.karmada", 40 * time.Second},
		{`module.karmada.karmadactl_join.push["member1"]`, 2 * time.Second},
	}
	k8sLabWebPorts = map[string]int{"member1": 18441, "member2": 18442, "member3": 18444}
	podsResource   = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	nodesResource  = schema.GroupVersionResource{Version: "v1", Resource: "nodes"}
)

func TestK8sLabKillAndResume(t *testing.T) {
	srv := requireLXD(t)
	for _, bin := range []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler", "kube-proxy", "kubelet"} {
		kubetest.Binary(t, bin) // skips, or fails under CI=true, when scripts/k8s-bins.sh has not run
	}
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	lab := filepath.Join(root, "flows", "k8s-lab")
	configDir := filepath.Join(t.TempDir(), "k8s-lab")
	tag := newTag(t)
	clearLabs(t, tag, root) // the other labs use the same member names and ports
	logComponentLogsOnFailure(t, []string{"karmada-host", "member1", "member2", "member3"})

	rng := seededRand(t, 0x8e5)
	events := watchCreations(t, srv, k8sLabInstances)
	var state string // the latest trial's: flow destroy undoes its run
	for trial := 1; trial <= k8sLabTrials; trial++ {
		events.reset()
		clusters := watchKarmadaClusters(t, configDir)
		state = filepath.Join(t.TempDir(), fmt.Sprintf("k8s-lab-%d.db", trial))
		args := []string{"run", lab, "--var", "config_dir=" + configDir, "--state", state}
		if trial <= len(k8sLabKillInside) {
			k := k8sLabKillInside[trial-1]
			killInside(t, tag, root, state, args, k.address, k.maxDelay, rng, k8sLabTimeout)
		} else {
			untilTheKillLands(t, trial, func() bool {
				return killAndResume(t, tag, root, state, args, rng, k8sLabTimeout)
			}, func() {
				destroyLab(t, tag, root, state)
				checkK8sLabGone(t, srv, configDir)
				events.reset()
				clusters.stop()
				clusters = watchKarmadaClusters(t, configDir)
			})
		}
		checkK8sLab(t, srv, trial, configDir, events.reset())
		checkKarmadaOnK8sLab(t, configDir)
		clusters.check(t, trial)
		if trial < k8sLabTrials {
			destroyLab(t, tag, root, state)
			checkK8sLabGone(t, srv, configDir)
		}
	}
	checkK8sLabStorage(t, configDir)
	checkFailoverDrill(t, tag, root, configDir)
	checkMonitoring(t, tag, root, configDir)
	checkFlaskRuns(t, tag, root, configDir)
	checkJobs(t, tag, root, configDir)
	checkDoctor(t, tag, root, configDir)
	checkKarmadaSuite(t, tag, root, configDir, state)
	destroyLab(t, tag, root, state)
	checkK8sLabGone(t, srv, configDir)
}

// checkK8sLab asserts the finished lab through LXD and each member's own API server,
// reached through its forwarded port: the lab's instances exist, none was created twice
// in the trial, every node is Ready, CoreDNS and two web pods run in every member, and the
// web Service answers on the host through kube-proxy.
func checkK8sLab(t *testing.T, srv lxdclient.InstanceServer, trial int, configDir string, created map[string]int) {
	t.Helper()
	names, err := srv.GetInstanceNames(api.InstanceTypeAny)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range k8sLabInstances {
		if !slices.Contains(names, want) {
			t.Errorf("instance %s is missing", want)
		}
	}
	checkCreatedOnce(t, trial, created, k8sLabInstances)
	ctx := context.Background()
	for member, port := range labMembers {
		path := filepath.Join(configDir, member+".config")
		if info, err := os.Stat(path); err != nil || info.Mode().Perm() != 0o600 {
			t.Errorf("kubeconfig %s: want mode 0600 (stat: %v)", path, err)
			continue
		}
		dyn := checkMemberServed(t, configDir, member, fmt.Sprintf("127.0.0.1:%d", port), fmt.Sprintf("127.0.0.1:%d", k8sLabWebPorts[member]))
		// CoreDNS runs one replica, the web Deployment two (workloads.hcl).
		for _, want := range []struct {
			ns, selector string
			replicas     int
		}{{"kube-system", "k8s-app=kube-dns", 1}, {"default", "app=web", 2}} {
			pods, err := dyn.Resource(podsResource).Namespace(want.ns).List(ctx, metav1.ListOptions{LabelSelector: want.selector})
			if err != nil {
				t.Errorf("pods %s in %s: %v", want.selector, member, err)
				continue
			}
			if running := runningPods(pods.Items); running != want.replicas {
				t.Errorf("%d %s pods Running in %s, want %d", running, want.selector, member, want.replicas)
			}
		}
	}
}

// checkMemberServed asserts that member's kubeconfig names api (host:port, where its
// host forwards the API server), that its node is Ready through it, and that its web
// Service answers on web (host:port); it returns a client of the member.
func checkMemberServed(t *testing.T, configDir, member, api, web string) dynamic.Interface {
	t.Helper()
	cfg, err := kube.RESTConfig(filepath.Join(configDir, member+".config"), "")
	if err != nil {
		t.Fatal(err)
	}
	if want := "https://" + api; cfg.Host != want {
		t.Errorf("%s.config points at %s, want %s, where its host forwards the API server", member, cfg.Host, want)
	}
	dyn := dynamic.NewForConfigOrDie(cfg)
	node, err := dyn.Resource(nodesResource).Get(context.Background(), member, metav1.GetOptions{})
	if err != nil {
		t.Errorf("node %s: %v", member, err)
	} else if !conditionTrue(node, "Ready") {
		t.Errorf("node %s is not Ready: %v", member, node.Object["status"])
	}
	if body := httpGet(t, "http://"+web+"/"); !strings.Contains(body, "web "+member) {
		t.Errorf("the web Service of %s answered %q on %s", member, body, web)
	}
	return dyn
}

func runningPods(pods []unstructured.Unstructured) int {
	n := 0
	for _, p := range pods {
		if phase, _, _ := unstructured.NestedString(p.Object, "status", "phase"); phase == "Running" {
			n++
		}
	}
	return n
}

// checkMonitoring runs flows/monitoring.hcl on the lab as a user would: Prometheus in
// member1, its pod reached from the host on 127.0.0.1:9091 through a proxy to the pod IP.
func checkMonitoring(t *testing.T, tag, root, configDir string) {
	t.Helper()
	r := runFlow(t, tag, root, 10*time.Minute, "run", filepath.Join(root, "flows", "monitoring.hcl"),
		"--var-file", filepath.Join(root, "flows", "k8s-lab", "vars", "monitoring.hcl"),
		"--var", "config_dir="+configDir, "--state", filepath.Join(t.TempDir(), "monitoring.db"))
	if r.code != 0 {
		t.Fatalf("monitoring exited %d\n%s", r.code, r.desc)
	}
	if body := httpGet(t, "http://127.0.0.1:9091/-/ready"); !strings.Contains(body, "Ready") {
		t.Errorf("Prometheus through 9091 answered %q", body)
	}
}

// checkFlaskRuns runs flows/flask-import.hcl with the lab's variables: the image is built
// without Docker, exported, pushed into every member, imported into containerd there (the
// `microk8s images import` step), run, and answers through a proxy to its pod.
func checkFlaskRuns(t *testing.T, tag, root, configDir string) {
	t.Helper()
	r := runFlow(t, tag, root, 10*time.Minute, "run", filepath.Join(root, "flows", "flask-import.hcl"),
		"--var-file", filepath.Join(root, "flows", "k8s-lab", "vars", "flask-import.hcl"),
		"--var", "config_dir="+configDir, "--state", filepath.Join(t.TempDir(), "flask.db"))
	if r.code != 0 {
		t.Fatalf("flask-import exited %d\n%s", r.code, r.desc)
	}
	for member := range labMembers {
		if !strings.Contains(r.stdout, fmt.Sprintf("[lxd_exec.verify[%q]] /root/flask-demo.tar: OK", member)) {
			t.Errorf("no sha256 check passed inside %s\n%s", member, r.desc)
		}
	}
	if body := httpGet(t, "http://127.0.0.1:15001/"); !strings.Contains(body, "hello from member1") {
		t.Errorf("the Flask pod in member1 answered %q", body)
	}
}

// checkK8sLabGone asserts that flow destroy left no lab instance, no listening port and
// no config directory, and kept the images the flow marks retain_on_destroy.
func checkK8sLabGone(t *testing.T, srv lxdclient.InstanceServer, configDir string) {
	t.Helper()
	names, err := srv.GetInstanceNames(api.InstanceTypeAny)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if slices.Contains(k8sLabInstances, n) {
			t.Errorf("instance %s survived the teardown", n)
		}
	}
	for _, profile := range []string{"flow-member", "flow-karmada-host", "flow-lab-registry"} {
		if _, _, err := srv.GetProfile(profile); err == nil {
			t.Errorf("profile %s survived the teardown", profile)
		}
	}
	for _, port := range []int{16441, 16442, 16443, 16444, 32000, 32443, 15000, 18441, 9091, 15001} {
		if c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second); err == nil {
			c.Close()
			t.Errorf("port %d still accepts connections after the teardown", port)
		}
	}
	if _, err := os.Stat(configDir); !os.IsNotExist(err) {
		t.Errorf("config dir %s survived the teardown (stat: %v)", configDir, err)
	}
	for _, alias := range []string{"flow-member", "flow-lab-busybox"} {
		if _, _, err := srv.GetImageAlias(alias); err != nil {
			t.Errorf("image %s (retain_on_destroy) was not kept: %v", alias, err)
		}
	}
}

// memberDiagnosis, run in a member, names its components that are down and those its
// supervisor started again (flows/k8s-lab/member/up.sh), then the last lines of each log.
const memberDiagnosis = `for f in /run/flow-member/*.pid; do n=$(basename "$f" .pid); kill -0 "$(cat "$f")" 2>/dev/null || echo "$n is not running"; done
grep -h "exited (" /var/log/k8s/*.log | tail -n 5
tail -n 3 /var/log/k8s/*.log`

// logComponentLogsOnFailure logs, when t fails, the last lines of each Kubernetes
// component's log in the members that still exist: a node that never registers, or a
// component that exited, says why only there.
func logComponentLogsOnFailure(t *testing.T, members []string) {
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		for _, m := range members {
			out, err := exec.Command("lxc", "exec", m, "--", "sh", "-c", memberDiagnosis).CombinedOutput()
			if err != nil {
				t.Logf("%s: no component logs (%v)", m, err)
				continue
			}
			t.Logf("%s, the last lines of /var/log/k8s/*.log:\n%s", m, out)
		}
	})
}
