package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	lxdclient "github.com/canonical/lxd/client"
	"github.com/canonical/lxd/shared/api"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/flowdev/flow/tasks/kube"
	"github.com/flowdev/flow/tasks/kube/kubetest"
)

// The Karmada local lab (flows/karmada-local-lab.hcl) for real: member containers with
// etcd + kube-apiserver behind LXD proxies, the Karmada control plane as host
// processes, real karmadactl joins. The run is SIGKILLed at a seeded moment and
// resumed; then the clusters must be Ready in Karmada and nginx must exist in every
// member's API server, read back through the forwarded ports. flow destroy must
// leave no container, process or file behind.

const (
	karmadaLabTimeout = 10 * time.Minute
	karmadaLabTrials  = 3
)

var karmadaClusters = schema.GroupVersionResource{Group: "cluster.karmada.io", Version: "v1alpha1", Resource: "clusters"}

func TestKarmadaLocalLabKillAndResume(t *testing.T) {
	srv := requireLXD(t)
	for _, bin := range []string{"kube-apiserver", "kube-controller-manager", "etcd", "karmadactl", "karmada-webhook"} {
		kubetest.Binary(t, bin) // skips, or fails under CI=true, when scripts/k8s-bins.sh has not run
	}
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	lab := filepath.Join(root, "flows", "karmada-local-lab.hcl")
	configDir := filepath.Join(t.TempDir(), "karmada")
	logProcessLogsOnFailure(t, filepath.Join(configDir, "run"))
	tag := newTag(t)
	clearLabs(t, tag, root) // the other labs use the same member names and ports

	rng := seededRand(t, 0xca11)
	members := []string{"member1", "member2", "member3"}
	events := watchCreations(t, srv, members)
	for trial := 1; trial <= karmadaLabTrials; trial++ {
		events.reset()
		state := filepath.Join(t.TempDir(), fmt.Sprintf("karmada-lab-%d.db", trial))
		args := []string{"run", lab, "--var", "config_dir=" + configDir, "--state", state}
		untilTheKillLands(t, trial, func() bool {
			return killAndResume(t, tag, root, state, args, rng, karmadaLabTimeout)
		}, func() {
			destroyLab(t, tag, root, state)
			checkKarmadaLabGone(t, srv, configDir)
			events.reset()
		})
		checkKarmadaLab(t, configDir)
		checkCreatedOnce(t, trial, events.reset(), members)
		destroyLab(t, tag, root, state)
		checkKarmadaLabGone(t, srv, configDir)
	}
}

// seededRand is the trials' random source: E2E_SEED, else defaultLabSeed, logged so a
// failure can be repeated; stream tells the tests' sequences apart.
func seededRand(t *testing.T, stream uint64) *rand.Rand {
	t.Helper()
	seed := uint64(defaultLabSeed)
	if s, err := strconv.ParseUint(os.Getenv("E2E_SEED"), 10, 64); err == nil {
		seed = s
	}
	t.Logf("seed %d (set E2E_SEED to repeat)", seed)
	return rand.New(rand.NewPCG(seed, seed^stream))
}

// killAndResume runs flow with args, SIGKILLs it once or twice at seeded moments and
// resumes it in between, then resumes it to the end unless a run finished first. It
// reports whether the first kill landed; when it did not (the run finished first), the
// trial proved nothing and the caller runs it again.
func killAndResume(t *testing.T, tag, root, state string, args []string, rng *rand.Rand, timeout time.Duration) (landed bool) {
	t.Helper()
	for kills := 1 + rng.IntN(2); kills > 0; kills-- {
		if killAtSeededMoment(t, tag, root, state, args, rng, timeout) {
			return landed
		}
		landed = true
		args = []string{"resume", "--state", state}
	}
	if r := runFlow(t, tag, root, timeout, args...); r.code != 0 {
		t.Fatalf("resume exited %d\n%s", r.code, r.desc)
	}
	return true
}

// killAtSeededMoment starts flow with args and SIGKILLs it after a seeded number of
// succeeded instances. When the run ends first, it waits for flow to exit and
// reports whether the run finished successfully.
func killAtSeededMoment(t *testing.T, tag, root, state string, args []string, rng *rand.Rand, timeout time.Duration) (finished bool) {
	t.Helper()
	p := start(t, tag, root, args...)
	ended := func() bool {
		if !p.wait(timeout) {
			t.Fatalf("flow did not finish\n%s", p.describe())
		}
		if p.code() != 0 {
			t.Fatalf("flow %s exited %d\n%s", args[0], p.code(), p.describe())
		}
		return true
	}
	// Until this process holds the state, status shows the previous run's end.
	first := waitStatus(t, tag, root, state, timeout, "the run to start", func(d statusDoc) bool {
		return d.Status == "running" || p.exited()
	})
	done := countStatus(first, "succeeded")
	if p.exited() || len(first.Tasks)-done < 3 {
		return ended()
	}
	at := done + 1 + rng.IntN(len(first.Tasks)-done-2)
	doc := waitStatus(t, tag, root, state, timeout, fmt.Sprintf("%d succeeded instances", at), func(d statusDoc) bool {
		return countStatus(d, "succeeded") >= at || d.Status != "running"
	})
	if doc.Status != "running" {
		t.Logf("the run ended (%s) before the kill after %d instances", doc.Status, at)
		return ended()
	}
	p.killGroup()
	if !p.wait(10*time.Second) || !p.signaled() {
		// flow exited by itself between the status read and the kill: the kill
		// did not land.
		t.Logf("the run ended before the kill after %d instances", at)
		return ended()
	}
	t.Logf("SIGKILL after %d of %d instances succeeded", at, len(first.Tasks))
	return false
}

// checkKarmadaLab asserts the finished lab through the files it wrote: every kubeconfig
// is private, the members are Ready clusters in Karmada, and the propagated nginx
// Deployment is in every member's API server, reached through its forwarded port.
func checkKarmadaLab(t *testing.T, configDir string) {
	t.Helper()
	ctx := context.Background()
	karmada := filepath.Join(configDir, "karmada-apiserver.config")
	for _, path := range []string{karmada, filepath.Join(configDir, "member1.config"), filepath.Join(configDir, "member2.config"), filepath.Join(configDir, "member3.config")} {
		info, err := os.Stat(path)
		if err != nil {
			t.Fatalf("kubeconfig missing: %v", err)
		}
		if info.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %v, want 0600", path, info.Mode().Perm())
		}
	}
	cfg, err := kube.RESTConfig(karmada, "")
	if err != nil {
		t.Fatal(err)
	}
	dyn := dynamic.NewForConfigOrDie(cfg)
	for member, port := range labMembers {
		cluster, err := dyn.Resource(karmadaClusters).Get(ctx, member, metav1.GetOptions{})
		if err != nil {
			t.Errorf("cluster %s in Karmada: %v", member, err)
		} else if !conditionTrue(cluster, "Ready") {
			t.Errorf("cluster %s is not Ready: %v", member, cluster.Object["status"])
		}
		mcfg, err := kube.RESTConfig(filepath.Join(configDir, member+".config"), "")
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf("https://127.0.0.1:%d", port); mcfg.Host != want {
			t.Errorf("%s.config points at %s, want the forwarded %s", member, mcfg.Host, want)
		}
		d, err := kubernetes.NewForConfigOrDie(mcfg).AppsV1().Deployments("default").Get(ctx, "nginx", metav1.GetOptions{})
		if err != nil {
			t.Errorf("nginx in %s through port %d: %v", member, port, err)
			continue
		}
		if !karmadaManaged(d.Labels) && !karmadaManaged(d.Annotations) {
			t.Errorf("nginx in %s carries no Karmada marks: labels %v, annotations %v", member, d.Labels, d.Annotations)
		}
	}
}

func conditionTrue(obj *unstructured.Unstructured, condition string) bool {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == condition && m["status"] == "True" {
			return true
		}
	}
	return false
}

// checkKarmadaLabGone asserts that the teardown left no member, no listening control
// plane or member port, and no config directory.
func checkKarmadaLabGone(t *testing.T, srv lxdclient.InstanceServer, configDir string) {
	t.Helper()
	names, err := srv.GetInstanceNames(api.InstanceTypeAny)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if _, ok := labMembers[n]; ok {
			t.Errorf("instance %s survived the teardown", n)
		}
	}
	if _, _, err := srv.GetProfile("flow-karmada-lab"); err == nil {
		t.Error("profile flow-karmada-lab survived the teardown")
	}
	for _, port := range []int{16441, 16442, 16444, 5443, 2479, 18443} {
		if c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second); err == nil {
			c.Close()
			t.Errorf("port %d still accepts connections after the teardown", port)
		}
	}
	if _, err := os.Stat(configDir); !os.IsNotExist(err) {
		t.Errorf("config dir %s survived the teardown (stat: %v)", configDir, err)
	}
}

// karmadaManaged reports whether Karmada's execution controller marked an object.
func karmadaManaged(marks map[string]string) bool {
	for k := range marks {
		if strings.Contains(k, "karmada.io/") {
			return true
		}
	}
	return false
}

// logProcessLogsOnFailure logs, when t fails, the last lines of every log file in dir:
// the control plane's processes write there, and a failed task's message seldom says
// why the process behind it misbehaved.
func logProcessLogsOnFailure(t *testing.T, dir string) {
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		logs, _ := filepath.Glob(filepath.Join(dir, "*.log"))
		for _, name := range logs {
			data, err := os.ReadFile(name)
			if err != nil {
				continue
			}
			lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
			t.Logf("%s (last 15 lines):\n%s", filepath.Base(name), strings.Join(lastN(lines, 15), "\n"))
		}
	})
}
