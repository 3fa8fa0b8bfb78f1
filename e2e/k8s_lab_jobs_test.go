package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/flowdev/flow/tasks/kube"
)

// k8s_job on the lab, as the lab's e2e runs it after the lab is up (checkJobs), or on a
// lab already up (TestK8sJobsOnLab, for whoever works on k8s_job).

var (
	jobsResource     = schema.GroupVersionResource{Group: "batch", Version: "v1", Resource: "jobs"}
	policiesResource = schema.GroupVersionResource{Group: "policy.karmada.io", Version: "v1alpha1", Resource: "propagationpolicies"}
)

// TestK8sJobsOnLab runs checkJobs on the lab whose config directory
// FLOW_E2E_LAB_CONFIG names (make demo's: .lab/k8s-lab). Without it, it is skipped:
// TestK8sLabKillAndResume runs checkJobs on the lab it builds.
func TestK8sJobsOnLab(t *testing.T) {
	dir := os.Getenv("FLOW_E2E_LAB_CONFIG")
	if dir == "" {
		t.Skip("FLOW_E2E_LAB_CONFIG is not set; TestK8sLabKillAndResume runs these checks on its own lab")
	}
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	abs, err := filepath.Abs(filepath.Join(root, dir))
	if filepath.IsAbs(dir) {
		abs = dir
	}
	if err != nil {
		t.Fatal(err)
	}
	checkJobs(t, newTag(t), root, abs)
}

// checkJobs runs k8s_job on the lab: 12 Jobs (4 per member) and one propagated by
// Karmada, flow SIGKILLed while they run and resumed: every Job was created once (by
// name and uid, in every member), the outputs reached the local step, each Job's log
// is in flow logs. A Job that exits 3 and one whose image the registry lacks fail with
// their reasons, and a propagated one names each member it failed in. Ctrl-C mid-run leaves no Job or pod of that run in any member, and
// flow destroy leaves none of the others.
func checkJobs(t *testing.T, tag, root, configDir string) {
	t.Helper()
	ctx := context.Background()
	members := map[string]dynamic.Interface{}
	for m := range labMembers {
		members[m] = labClient(t, filepath.Join(configDir, m+".config"))
	}
	karmada := labClient(t, filepath.Join(configDir, "karmada", "karmada-apiserver.config"))
	flowFile := filepath.Join(root, "e2e", "testdata", "jobs-lab.hcl")
	run := "e2e-run=" + tag // the label of this test's Jobs: a lab may hold others
	out := filepath.Join(t.TempDir(), "collected")
	state := filepath.Join(t.TempDir(), "jobs.db")
	args := []string{"run", flowFile, "--parallelism", "20", "--var", "config_dir=" + configDir, "--var", "out=" + out,
		"--var", "run=" + tag, "--state", state}
	cleanupJobs(t, tag, root, state)

	// Killed while every Job runs, then resumed.
	p := start(t, tag, root, args...)
	before := waitFlowJobs(t, members, run, 5, 5, 3*time.Minute, p)
	p.killGroup()
	<-p.done
	r := runFlow(t, tag, root, 5*time.Minute, "resume", "--state", state)
	if r.code != 0 {
		t.Fatalf("resume after SIGKILL exited %d\n%s", r.code, r.desc)
	}
	after := flowJobs(t, members, run)
	for m, jobs := range after {
		if len(jobs) != 5 {
			t.Errorf("%s holds %d Jobs of the run, want 5 (4 of its own and the propagated one): %v", m, len(jobs), jobs)
		}
		for name, uid := range jobs {
			if before[m][name] != uid {
				t.Errorf("%s: Job %s has uid %s after the resume, %q before the kill: it was created again", m, name, uid, before[m][name])
			}
		}
	}
	collected := readFile(t, out)
	for m := range labMembers {
		for i := 1; i <= 4; i++ {
			key := fmt.Sprintf("%s-%d", m, i)
			if want := key + " " + key + " " + m; !strings.Contains(collected, want) {
				t.Errorf("the local step did not get %s's outputs (want line %q):\n%s", key, want, collected)
			}
		}
		if !strings.Contains(collected, "fanout "+m+" flow-fanout-") {
			t.Errorf("the local step did not get the propagated Job's outputs from %s:\n%s", m, collected)
		}
	}
	logs := runFlow(t, tag, root, 30*time.Second, "logs", "--state", state, `k8s_job.work["member2-3"]`)
	if !strings.Contains(logs.stdout, "work member2-3 starts") || !strings.Contains(logs.stdout, "work member2-3 done") {
		t.Errorf("flow logs of a Job lacks its pod's log\n%s", logs.desc)
	}
	logs = runFlow(t, tag, root, 30*time.Second, "logs", "--state", state, "k8s_job.fanout")
	for m := range labMembers {
		if !strings.Contains(logs.stdout, m+": fanout on flow-fanout-") {
			t.Errorf("flow logs of the propagated Job lacks %s's pod log\n%s", m, logs.desc)
		}
	}

	// Failures say why.
	failState := filepath.Join(t.TempDir(), "jobs-fail.db")
	cleanupJobs(t, tag, root, failState)
	r = runFlow(t, tag, root, 5*time.Minute, "run", filepath.Join(root, "e2e", "testdata", "jobs-fail.hcl"),
		"--var", "config_dir="+configDir, "--state", failState)
	if r.code != 1 {
		t.Errorf("the failing Jobs' run exited %d, want 1\n%s", r.code, r.desc)
	}
	byAddr := status(t, tag, root, failState).byAddress()
	for addr, want := range map[string][]string{
		"k8s_job.exit3":   {"exited with code 3", "about to fail"},
		"k8s_job.noimage": {"localhost:32000/nothere:1.0", "cannot be pulled"},
		"k8s_job.fanout_fail": {"2 of 2 members failed", "member1: Job default/flow-fanout-fail-", "member3: Job default/flow-fanout-fail-",
			"exited with code 4", "propagated and failing"},
	} {
		for _, w := range want {
			if !strings.Contains(byAddr[addr].Error, w) {
				t.Errorf("%s failed with %q, want it to say %q", addr, byAddr[addr].Error, w)
			}
		}
	}
	if r := runFlow(t, tag, root, 3*time.Minute, "destroy", "--auto-approve", "--state", failState); r.code != 0 {
		t.Errorf("destroy of the failing Jobs exited %d\n%s", r.code, r.desc)
	}

	// Ctrl-C mid-run: the run's Jobs and pods go, in every member; the first run's stay.
	stopState := filepath.Join(t.TempDir(), "jobs-stop.db")
	cleanupJobs(t, tag, root, stopState)
	p = start(t, tag, root, "run", flowFile, "--parallelism", "20", "--var", "config_dir="+configDir, "--var", "out="+out+".2",
		"--var", "sleep=120", "--var", "run="+tag, "--state", stopState)
	waitFlowJobs(t, members, run, 10, 5, 3*time.Minute, p) // the first run's 5 and this one's, running
	p.signal(t, 2)
	if !p.wait(90 * time.Second) {
		t.Fatalf("flow did not exit within 90s of Ctrl-C\n%s", p.describe())
	}
	if p.code() != 130 {
		t.Errorf("Ctrl-C: flow exited %d, want 130\n%s", p.code(), p.describe())
	}
	for m, jobs := range flowJobs(t, members, run) {
		if !sameKeys(jobs, after[m]) {
			t.Errorf("%s after Ctrl-C holds Jobs %v, want only the first run's %v", m, keys(jobs), keys(after[m]))
		}
		if pods := flowPods(t, members[m], run); len(pods) > len(after[m]) {
			t.Errorf("%s after Ctrl-C holds pods %v: the stopped run's are left", m, pods)
		}
	}

	// flow destroy leaves no Job, pod or policy of the run anywhere.
	if r := runFlow(t, tag, root, 3*time.Minute, "destroy", "--auto-approve", "--state", state); r.code != 0 {
		t.Fatalf("destroy exited %d\n%s", r.code, r.desc)
	}
	_ = runFlow(t, tag, root, 3*time.Minute, "destroy", "--auto-approve", "--state", stopState)
	for m, jobs := range flowJobs(t, members, run) {
		if len(jobs) > 0 {
			t.Errorf("%s after destroy holds Jobs %v", m, keys(jobs))
		}
		if pods := flowPods(t, members[m], run); len(pods) > 0 {
			t.Errorf("%s after destroy holds pods %v", m, pods)
		}
	}
	for _, gvr := range []schema.GroupVersionResource{jobsResource, policiesResource} {
		list, err := karmada.Resource(gvr).Namespace("default").List(ctx, metav1.ListOptions{LabelSelector: run})
		if err != nil {
			t.Fatal(err)
		}
		if len(list.Items) > 0 {
			t.Errorf("Karmada still holds %d %s of the runs", len(list.Items), gvr.Resource)
		}
	}
}

// cleanupJobs destroys what the run of state made when the test ends, for a test that
// failed before its own destroy: the lab stays in use.
func cleanupJobs(t *testing.T, tag, root, state string) {
	t.Cleanup(func() {
		if _, err := os.Stat(state); err == nil {
			_ = runFlow(t, tag, root, 3*time.Minute, "destroy", "--auto-approve", "--state", state)
		}
	})
}

func labClient(t *testing.T, kubeconfig string) dynamic.Interface {
	t.Helper()
	cfg, err := kube.RESTConfig(kubeconfig, "")
	if err != nil {
		t.Fatal(err)
	}
	return dynamic.NewForConfigOrDie(cfg)
}

// flowJobs lists, by member, the uid of every Job flow made there, by name.
func flowJobs(t *testing.T, members map[string]dynamic.Interface, selector string) map[string]map[string]string {
	t.Helper()
	out := map[string]map[string]string{}
	for m, dyn := range members {
		list, err := dyn.Resource(jobsResource).Namespace("default").List(context.Background(), metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			t.Fatalf("%s: list Jobs: %v", m, err)
		}
		out[m] = map[string]string{}
		for _, j := range list.Items {
			if j.GetDeletionTimestamp() == nil {
				out[m][j.GetName()] = string(j.GetUID())
			}
		}
	}
	return out
}

// flowPods lists the pods selector selects in a member.
func flowPods(t *testing.T, dyn dynamic.Interface, selector string) []string {
	t.Helper()
	var names []string
	for _, p := range listPods(t, dyn, selector) {
		names = append(names, p.GetName())
	}
	return names
}

func listPods(t *testing.T, dyn dynamic.Interface, selector string) []unstructured.Unstructured {
	t.Helper()
	list, err := dyn.Resource(podsResource).Namespace("default").List(context.Background(), metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// waitFlowJobs waits until every member holds at least n of the Jobs selector selects
// and running of their pods, and returns the Jobs; p is the run, which must not end
// meanwhile.
func waitFlowJobs(t *testing.T, members map[string]dynamic.Interface, selector string, n, running int, timeout time.Duration, p *proc) map[string]map[string]string {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		jobs := flowJobs(t, members, selector)
		ready := true
		for m := range members {
			if len(jobs[m]) < n || len(runningJobPods(t, members[m], selector)) < running {
				ready = false
			}
		}
		if ready {
			return jobs
		}
		if p.exited() {
			t.Fatalf("flow ended before its Jobs ran\n%s", p.describe())
		}
		if time.Now().After(deadline) {
			t.Fatalf("the members never held %d running Jobs each within %s: %v\n%s", n, timeout, jobs, p.describe())
		}
		time.Sleep(time.Second)
	}
}

func runningJobPods(t *testing.T, dyn dynamic.Interface, selector string) []string {
	t.Helper()
	var names []string
	for _, p := range listPods(t, dyn, selector) {
		if phase, _, _ := unstructured.NestedString(p.Object, "status", "phase"); phase == "Running" {
			names = append(names, p.GetName())
		}
	}
	return names
}

func sameKeys(a, b map[string]string) bool {
	return slices.Equal(keys(a), keys(b))
}

func keys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
