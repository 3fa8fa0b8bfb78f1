package e2e

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flowdev/flow/internal/lxdtest"
	"github.com/flowdev/flow/tasks/kube/kubetest"
)

// The Kubernetes lab on an LXD cluster (issue 41, make demo-cluster): the three members
// of scripts/lab-cluster.sh (c1, c2, c3 on 127.0.0.3, .4 and .5, one cluster reached as
// one remote through c1), each cluster of the lab placed on a member by target
// (flows/k8s-lab/vars/lxd-cluster.hcl), the registries by LXD's scheduler, every proxy
// device on the address of its instance's member.
//
// One run, three faults. The run loses member c2's daemon (SIGKILL) while the launch of
// member1, which targets c2, runs, and c2 stays down: the run fails naming c2. With c2
// back, the resume loses it again at the same launch, for 10 s: the resume retries what
// the cluster refused and goes on; then flow itself is SIGKILLed at a seeded moment, and
// the next resume finishes. Then every instance is on the member it was placed on, as
// each member's own daemon lists it, none was created twice, every node is Ready
// through its member's address, Karmada's Clusters are Ready, and a Deployment the
// flow never saw is propagated into member2 (on c3) by Karmada (on c1). flow destroy
// leaves nothing of the lab on any member.

var (
	// Where vars/lxd-cluster.hcl places each cluster, and each member's address.
	clusterLabTargets   = map[string]string{"karmada-host": "c1", "member1": "c2", "member2": "c3", "member3": "c1"}
	clusterLabAddresses = map[string]string{"c1": "127.0.0.3", "c2": "127.0.0.4", "c3": "127.0.0.5"}
	clusterLabAPIPorts  = map[string]int{"member1": 16441, "member2": 16442, "member3": 16444}
	clusterLabWebPorts  = map[string]int{"member1": 18441, "member2": 18442, "member3": 18444}
	clusterLabInstances = []string{"karmada-host", "member1", "member2", "member3", "lab-registry", "lab-upstream"}
)

func TestK8sLabOnLXDCluster(t *testing.T) {
	requireLXD(t) // preflight checks this machine's daemon too
	for _, bin := range []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler", "kube-proxy", "kubelet"} {
		kubetest.Binary(t, bin)
	}
	c := lxdtest.HoldCluster(t) // alone: it stops a member
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	configDir := filepath.Join(t.TempDir(), "k8s-lab")
	tag := newTag(t)
	clearLabs(t, tag, root) // one kernel: the main daemon's lab has the same instance names
	clearClusterLab(t, c)
	logClusterComponentLogsOnFailure(t, c)
	created := c.WatchCreations(t)
	rng := seededRand(t, 0x41c)
	args := func(state string) []string {
		return []string{"run", filepath.Join(root, "flows", "k8s-lab"),
			"--var-file", filepath.Join(root, "flows", "k8s-lab", "vars", "lxd-cluster.hcl"),
			"--var", "config_dir=" + configDir, "--state", state}
	}
	state := filepath.Join(t.TempDir(), "k8s-lab-cluster.db")
	const launch = `lxd_launch.member["member1"]`

	// Lost for good: the run fails naming c2.
	p := start(t, tag, root, args(state)...)
	loseMemberWhile(t, tag, root, state, c, p, launch, "c2")
	if !p.wait(k8sLabTimeout) {
		t.Fatalf("the run with c2 down did not end\n%s", p.describe())
	}
	if p.code() != 1 {
		t.Fatalf("the run with c2 down exited %d, want 1\n%s", p.code(), p.describe())
	}
	if e := status(t, tag, root, state).byAddress()[launch].Error; !strings.Contains(e, `cluster member "c2"`) {
		t.Errorf("member1's launch failed with %q, want it to name cluster member c2", e)
	}
	if out, err := c.StartMembers(); err != nil {
		t.Fatalf("start c2 again: %v\n%s", err, out)
	}

	// Lost for 10 s: the resume goes on; then flow is SIGKILLed and resumed.
	p = start(t, tag, root, "resume", "--state", state)
	loseMemberWhile(t, tag, root, state, c, p, launch, "c2")
	time.Sleep(10 * time.Second)
	if out, err := c.StartMembers(); err != nil {
		t.Fatalf("start c2 again: %v\n%s", err, out)
	}
	waitStatus(t, tag, root, state, k8sLabTimeout, launch+" to succeed", func(d statusDoc) bool {
		if st := d.byAddress()[launch].Status; st == "failed" || d.Status != "running" && p.exited() {
			t.Fatalf("the resume with c2 lost for 10 s: %s %s, the run %s\n%s", launch, st, d.Status, p.describe())
		}
		return d.byAddress()[launch].Status == "succeeded"
	})
	killLater(t, tag, root, state, p, rng)
	if r := runFlow(t, tag, root, k8sLabTimeout, "resume", "--state", state); r.code != 0 {
		t.Fatalf("the last resume exited %d\n%s", r.code, r.desc)
	}

	checkClusterPlacement(t, c)
	for _, n := range clusterLabInstances {
		if got := created(n); got != 1 {
			t.Errorf("instance %s was created %d times, want once", n, got)
		}
	}
	for m, port := range clusterLabAPIPorts {
		addr := clusterLabAddresses[clusterLabTargets[m]]
		checkMemberServed(t, configDir, m, fmt.Sprintf("%s:%d", addr, port), fmt.Sprintf("%s:%d", addr, clusterLabWebPorts[m]))
	}
	checkKarmadaOnK8sLab(t, configDir)
	checkPropagatedTo(t, configDir, "member2", "unseen-"+tag)
	destroyLab(t, tag, root, state)
	checkClusterLabGone(t, c, configDir)
}

// killLater SIGKILLs the run p of state after a seeded number of further instances
// succeeded, unless it ends first.
func killLater(t *testing.T, tag, root, state string, p *proc, rng *rand.Rand) {
	t.Helper()
	now := status(t, tag, root, state)
	done, left := countStatus(now, "succeeded"), len(now.Tasks)-countStatus(now, "succeeded")
	if left < 2 {
		return
	}
	at := done + 1 + rng.IntN(left-1)
	doc := waitStatus(t, tag, root, state, k8sLabTimeout, fmt.Sprintf("%d succeeded instances", at), func(d statusDoc) bool {
		return countStatus(d, "succeeded") >= at || d.Status != "running"
	})
	if doc.Status != "running" {
		t.Logf("the resume ended (%s) before its kill after %d instances", doc.Status, at)
		for _, task := range doc.Tasks {
			if task.Status == "failed" { // the member back, nothing may fail
				t.Errorf("%s failed in the resume that lost c2 for 10 s: %s", task.Address, task.Error)
			}
		}
		p.wait(time.Minute)
		return
	}
	p.killGroup()
	p.wait(10 * time.Second)
	t.Logf("SIGKILL of flow after %d of %d instances succeeded", at, len(doc.Tasks))
}

// loseMemberWhile waits until address runs in the run p of state, then SIGKILLs the
// daemon of the cluster member it runs on.
func loseMemberWhile(t *testing.T, tag, root, state string, c lxdtest.Cluster, p *proc, address, member string) {
	t.Helper()
	waitStatus(t, tag, root, state, k8sLabTimeout, address+" to run", func(d statusDoc) bool {
		if d.Status != "running" && p.exited() {
			t.Fatalf("the run ended (%s) before %s ran\n%s", d.Status, address, p.describe())
		}
		return d.byAddress()[address].Status == "running"
	})
	c.KillMember(t, member)
	t.Logf("SIGKILL of member %s's daemon while %s ran", member, address)
}

// checkClusterPlacement asserts, through each member's own daemon (lxc list on its unix
// socket), that every instance of the lab is on the member it was placed on, and that
// all members agree.
func checkClusterPlacement(t *testing.T, c lxdtest.Cluster) {
	t.Helper()
	for _, m := range c.Members {
		out, err := c.LxcOn(m, "list", "-c", "nL", "-f", "csv")
		if err != nil {
			t.Fatal(err)
		}
		where := map[string]string{}
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			if name, loc, ok := strings.Cut(line, ","); ok {
				where[name] = loc
			}
		}
		for _, n := range clusterLabInstances {
			want, placed := clusterLabTargets[n]
			switch got, ok := where[n]; {
			case !ok:
				t.Errorf("member %s lists no instance %s", m, n)
			case placed && got != want:
				t.Errorf("member %s lists %s on %s, want %s (its target)", m, n, got, want)
			case !placed && clusterLabAddresses[got] == "":
				t.Errorf("member %s lists %s on %q, no member of the cluster", m, n, got)
			}
		}
	}
}

// clearClusterLab removes what an interrupted earlier test left of the lab on the cluster.
func clearClusterLab(t *testing.T, c lxdtest.Cluster) {
	t.Helper()
	for _, n := range clusterLabInstances {
		_, _ = c.Lxc("delete", "--force", n)
	}
	for _, p := range []string{"flow-member", "flow-karmada-host", "flow-lab-registry"} {
		_, _ = c.Lxc("profile", "delete", p)
	}
}

// checkClusterLabGone: after flow destroy, no member has an instance or profile of the
// lab, nothing listens on the lab's ports at any member's address, and the config
// directory is gone.
func checkClusterLabGone(t *testing.T, c lxdtest.Cluster, configDir string) {
	t.Helper()
	for _, m := range c.Members {
		out, err := c.LxcOn(m, "list", "-c", "n", "-f", "csv")
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range strings.Fields(out) {
			if slices.Contains(clusterLabInstances, n) {
				t.Errorf("instance %s survived the teardown (member %s lists it)", n, m)
			}
		}
	}
	for _, p := range []string{"flow-member", "flow-karmada-host", "flow-lab-registry"} {
		if _, err := c.Lxc("profile", "show", p); err == nil {
			t.Errorf("profile %s survived the teardown", p)
		}
	}
	for _, addr := range clusterLabAddresses {
		for _, port := range []int{16441, 16442, 16443, 16444, 32000, 32443, 15000, 18441, 18442, 18444} {
			if conn, err := net.DialTimeout("tcp", fmt.Sprintf("%s:%d", addr, port), time.Second); err == nil {
				conn.Close()
				t.Errorf("%s:%d still accepts connections after the teardown", addr, port)
			}
		}
	}
	if _, err := os.Stat(configDir); !os.IsNotExist(err) {
		t.Errorf("config dir %s survived the teardown (stat: %v)", configDir, err)
	}
}

// logClusterComponentLogsOnFailure logs the last lines of each cluster's component logs
// when the test failed, read through the cluster.
func logClusterComponentLogsOnFailure(t *testing.T, c lxdtest.Cluster) {
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		for _, m := range []string{"karmada-host", "member1", "member2", "member3"} {
			out, err := c.Lxc("exec", m, "--", "sh", "-c", memberDiagnosis)
			if err != nil {
				t.Logf("%s: no component logs (%v)", m, err)
				continue
			}
			t.Logf("%s, the last lines of /var/log/k8s/*.log:\n%s", m, out)
		}
	})
}
