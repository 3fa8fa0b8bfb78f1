package kube

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/zclconf/go-cty/cty"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/flowdev/flow/tasks"
	"github.com/flowdev/flow/tasks/kube/kubetest"
	"github.com/flowdev/flow/tasks/taskstest"
)

func TestJobName(t *testing.T) {
	env := func(lineage, addr string) *tasks.Env { return &tasks.Env{Lineage: lineage, Address: addr} }
	base := func() *Job { return &Job{Image: "busybox", Args: []string{"true"}} }
	name := base().jobName(env("L1", `k8s_job.smoke["member1"]`))
	if !strings.HasPrefix(name, "flow-smoke-member1-") || len(name) != len("flow-smoke-member1-")+10 {
		t.Errorf("name = %q, want flow-smoke-member1-<10 hex>", name)
	}
	if again := base().jobName(env("L1", `k8s_job.smoke["member1"]`)); again != name {
		t.Errorf("the same step is named %q, then %q", name, again)
	}
	changed := base()
	changed.Args = []string{"false"}
	secret := base()
	secret.Env = map[string]string{"TOKEN": "a"}
	secret.SetSensitive(map[string][]cty.Path{"env": {cty.IndexStringPath("TOKEN")}})
	otherSecret := base()
	otherSecret.Env = map[string]string{"TOKEN": "b"}
	otherSecret.SetSensitive(map[string][]cty.Path{"env": {cty.IndexStringPath("TOKEN")}})
	for what, other := range map[string]string{
		"another state":   base().jobName(env("L2", `k8s_job.smoke["member1"]`)),
		"another address": base().jobName(env("L1", `k8s_job.smoke["member2"]`)),
		"other args":      changed.jobName(env("L1", `k8s_job.smoke["member1"]`)),
		"a secret":        secret.jobName(env("L1", `k8s_job.smoke["member1"]`)),
		"another secret":  otherSecret.jobName(env("L1", `k8s_job.smoke["member1"]`)),
	} {
		if other == name {
			t.Errorf("%s: same name %q", what, name)
		}
	}
	if secret.jobName(env("L1", "x")) == otherSecret.jobName(env("L1", "x")) {
		t.Error("a changed secret value keeps the Job's name: the old Job would be adopted")
	}
	long := base().jobName(env("", "module.lab[\"a-very-long-module-key-indeed\"].k8s_job.a_step_with_a_long_name[\"and-a-long-key-too-0123456789\"]"))
	if len(long) > 63 || strings.Contains(long, "--") {
		t.Errorf("long name %q (%d characters): want at most 63, no double dash", long, len(long))
	}
}

func TestParseOutputs(t *testing.T) {
	for _, tc := range []struct {
		message string
		want    map[string]string
		err     string
	}{
		{"", map[string]string{}, ""},
		{`{"a":"x","n":3,"o":{"k":true}}`, map[string]string{"a": "x", "n": "3", "o": `{"k":true}`}, ""},
		{"not json", nil, `the termination message is not a JSON object`},
		{`["a"]`, nil, `not a JSON object`},
	} {
		got, err := parseOutputs(tc.message)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("parseOutputs(%q) error = %v, want %q", tc.message, err, tc.err)
			}
			continue
		}
		if err != nil || fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("parseOutputs(%q) = %v, %v; want %v", tc.message, got, err, tc.want)
		}
	}
}

func TestJobValidate(t *testing.T) {
	neg := -1
	taskstest.CheckValidate(t, []taskstest.ValidateCase{
		{Name: "no image", Task: &Job{}, Attr: "image", Msg: "must not be empty"},
		{Name: "bad namespace", Task: &Job{Image: "i", Namespace: "Bad_NS"}, Attr: "namespace", Msg: "not a valid namespace"},
		{Name: "bad env name", Task: &Job{Image: "i", Env: map[string]string{"A B": "x"}}, Attr: "env", Msg: `"A B" is not a valid environment variable name`},
		{Name: "bad quantity", Task: &Job{Image: "i", Resources: map[string]map[string]string{"limits": {"cpu": "lots"}}}, Attr: "resources", Msg: `limits.cpu: "lots" is not a quantity`},
		{Name: "unknown resources key", Task: &Job{Image: "i", Resources: map[string]map[string]string{"limit": {"cpu": "1"}}}, Attr: "resources", Msg: `unknown key "limit"`},
		{Name: "negative backoff", Task: &Job{Image: "i", BackoffLimit: &neg}, Attr: "backoff_limit", Msg: "must not be negative"},
		{Name: "bad deadline", Task: &Job{Image: "i", ActiveDeadline: "soon"}, Attr: "active_deadline"},
		{Name: "bad label", Task: &Job{Image: "i", Labels: map[string]string{"a": "b c"}}, Attr: "labels", Msg: "not a valid label value"},
		{Name: "bad selector", Task: &Job{Image: "i", NodeSelector: map[string]string{"-x": "y"}}, Attr: "node_selector", Msg: "not a valid label key"},
		{Name: "divide without karmada", Task: &Job{Image: "i", DivideReplicas: true}, Attr: "divide_replicas", Msg: "needs clusters or cluster_labels"},
		{Name: "valid", Task: &Job{Image: "i", Clusters: []string{"m1"}, DivideReplicas: true, ActiveDeadline: "1m"}},
	})
}

// TestJobAPIServer runs k8s_job against a real kube-apiserver with the Job and
// garbage-collector controllers; there is no scheduler and no kubelet, so the test
// plays the kubelet: it binds each pod and writes the status a kubelet would (the
// lab's e2e runs the same Jobs on real members).
func TestJobAPIServer(t *testing.T) {
	s := kubetest.Start(t, kubetest.Options{Controllers: []string{"job-controller", "garbage-collector-controller"}})
	cs := s.Clientset(t)
	for _, tc := range []struct {
		name string
		run  func(t *testing.T, s *kubetest.Server, cs *kubernetes.Clientset)
	}{
		{"outputs from the termination message (kubelet played by the test)", testJobOutputs},
		{"adopted after a crash, never created twice (kubelet played by the test)", testJobAdopted},
		{"sensitive env in a Secret (kubelet played by the test)", testJobSecretEnv},
		{"failure reasons (kubelet played by the test)", testJobFailures},
		{"a reported failure starts again (kubelet played by the test)", testJobRetry},
		{"Ctrl-C deletes the Job and its pods", testJobInterrupted},
		{"destroy and probe", testJobDestroyProbe},
		{"destroy deletes the pods of a Job gone already", testJobDestroyOrphanPods},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, s, cs) })
	}
}

// newJob is a k8s_job in its own namespace of s.
func newJob(t *testing.T, s *kubetest.Server, cs *kubernetes.Clientset) *Job {
	t.Helper()
	sum := sha256.Sum256([]byte(t.Name()))
	ns := "job-" + hex.EncodeToString(sum[:6])
	if _, err := cs.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return &Job{Image: "localhost:32000/busybox:1.36", Command: []string{"sh", "-c"}, Args: []string{"echo hi"},
		Namespace: ns, Kubeconfig: s.Kubeconfig, unschedulable: time.Second}
}

// jobEnv is an Env for address in a state of lineage "test".
func jobEnv(t *testing.T, address string) (*tasks.Env, *taskstest.Buffer) {
	env, buf := taskstest.NewEnv(t)
	env.Address, env.Lineage = address, "test"
	return env, buf
}

// kubelet is what the test's kubelet makes of the n-th pod of a Job (from 1): the
// status it writes; nil leaves the pod alone.
type kubelet func(n int, pod *corev1.Pod) *corev1.PodStatus

// playKubelet binds every new pod of the Job named name to node "node-a" and writes
// the status kubelet gives it, and removes a pod being deleted, until the test ends.
func playKubelet(t *testing.T, cs kubernetes.Interface, ns, name string, kubelet kubelet) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		seen := map[string]int{}
		for ctx.Err() == nil {
			pods, _ := typedPods(ctx, cs, ns, name)
			for i := range pods {
				p := &pods[i]
				if p.DeletionTimestamp != nil { // the kubelet stopped its containers
					zero := int64(0)
					_ = cs.CoreV1().Pods(ns).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
					continue
				}
				if _, ok := seen[p.Name]; ok {
					continue
				}
				seen[p.Name] = len(seen) + 1
				st := kubelet(seen[p.Name], p)
				if st == nil {
					continue
				}
				if p.Spec.NodeName == "" && !unschedulableStatus(st) {
					_ = cs.CoreV1().Pods(ns).Bind(ctx, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: p.Name},
						Target: corev1.ObjectReference{Kind: "Node", Name: "node-a"}}, metav1.CreateOptions{})
				}
				p, err := cs.CoreV1().Pods(ns).Get(ctx, p.Name, metav1.GetOptions{})
				if err != nil {
					continue
				}
				p.Status = *st
				if _, err := cs.CoreV1().Pods(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
					delete(seen, p.Name) // try again
				}
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()
}

// typedPods are the pods of the Job named name.
func typedPods(ctx context.Context, cs kubernetes.Interface, ns, name string) ([]corev1.Pod, error) {
	list, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: jobNameLabel + "=" + name})
	if err != nil {
		return nil, err
	}
	return list.Items, nil
}

func unschedulableStatus(st *corev1.PodStatus) bool {
	for _, c := range st.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
			return true
		}
	}
	return false
}

// terminated is a pod status whose step container exited with code and message.
func terminated(code int32, reason, message string) *corev1.PodStatus {
	phase := corev1.PodSucceeded
	if code != 0 {
		phase = corev1.PodFailed
	}
	now := metav1.Now()
	return &corev1.PodStatus{Phase: phase, StartTime: &now, ContainerStatuses: []corev1.ContainerStatus{{
		Name: containerName, Image: "localhost:32000/busybox:1.36",
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, Reason: reason, Message: message, FinishedAt: now}},
	}}}
}

func waiting(reason, message string) *corev1.PodStatus {
	return &corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{
		Name: containerName, Image: "localhost:32000/nothere:1",
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: message}},
	}}}
}

func testJobOutputs(t *testing.T, s *kubetest.Server, cs *kubernetes.Clientset) {
	j := newJob(t, s, cs)
	env, buf := jobEnv(t, "k8s_job.outputs")
	name := j.jobName(env)
	playKubelet(t, cs, j.Namespace, name, func(int, *corev1.Pod) *corev1.PodStatus {
		return terminated(0, "Completed", `{"answer":"42","count":3}`)
	})
	mustValidate(t, j)
	out, err := j.Run(t.Context(), env)
	if err != nil {
		t.Fatalf("Run() = %v; printed:\n%s", err, buf)
	}
	if got := out["outputs"]; !got.Equals(cty.MapVal(map[string]cty.Value{"answer": cty.StringVal("42"), "count": cty.StringVal("3")})).True() {
		t.Errorf("outputs = %#v", got)
	}
	if out["job"].AsString() != name || out["node"].AsString() != "node-a" || !out["exit_code"].Equals(cty.NumberIntVal(0)).True() {
		t.Errorf("job, node, exit_code = %#v, %#v, %#v", out["job"], out["node"], out["exit_code"])
	}
	if !strings.Contains(buf.String(), "created Job "+j.Namespace+"/"+name) {
		t.Errorf("printed:\n%s\nwant the created Job named", buf)
	}
	job, err := cs.BatchV1().Jobs(j.Namespace).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if job.Annotations[annotationAddress] != "k8s_job.outputs" || job.Labels[labelInstance] != instanceKey(env) {
		t.Errorf("job annotations %v, labels %v: want the address and the instance", job.Annotations, job.Labels)
	}
	if c := job.Spec.Template.Spec.Containers[0]; c.Image != j.Image || strings.Join(c.Args, " ") != "echo hi" || job.Spec.Template.Spec.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("container %+v", c)
	}
}

func testJobAdopted(t *testing.T, s *kubetest.Server, cs *kubernetes.Clientset) {
	j := newJob(t, s, cs)
	env, _ := jobEnv(t, `k8s_job.adopt["a"]`)
	name := j.jobName(env)
	mustValidate(t, j)
	c, err := newCluster(s.Config, "", env.Stdout, env.Logger)
	if err != nil {
		t.Fatal(err)
	}
	// The crashed run: it created the Job, and flow was killed before it saw it end.
	if err := j.start(t.Context(), env, c, name); err != nil {
		t.Fatal(err)
	}
	first, err := cs.BatchV1().Jobs(j.Namespace).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	playKubelet(t, cs, j.Namespace, name, func(int, *corev1.Pod) *corev1.PodStatus { return terminated(0, "Completed", `{"k":"v"}`) })
	env2, buf := jobEnv(t, `k8s_job.adopt["a"]`)
	out, err := j.Run(t.Context(), env2)
	if err != nil {
		t.Fatalf("Run() = %v; printed:\n%s", err, buf)
	}
	if !strings.Contains(buf.String(), "adopting Job "+j.Namespace+"/"+name) {
		t.Errorf("printed:\n%s\nwant the Job adopted", buf)
	}
	list, err := cs.BatchV1().Jobs(j.Namespace).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 || list.Items[0].UID != first.UID {
		t.Errorf("Jobs after the resume: %d, want the first one only (uid %s)", len(list.Items), first.UID)
	}
	pods, _ := typedPods(t.Context(), cs, j.Namespace, name)
	if len(pods) != 1 {
		t.Errorf("pods: %d, want 1", len(pods))
	}
	if out["outputs"].Index(cty.StringVal("k")).AsString() != "v" {
		t.Errorf("outputs = %#v", out["outputs"])
	}
	// A changed step gets a new Job, and the old one goes.
	j.Args = []string{"echo changed"}
	newName := j.jobName(env)
	playKubelet(t, cs, j.Namespace, newName, func(int, *corev1.Pod) *corev1.PodStatus { return terminated(0, "Completed", "") })
	if _, err := j.Run(t.Context(), env); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.BatchV1().Jobs(j.Namespace).Get(t.Context(), name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the changed step's old Job: get = %v, want it deleted", err)
	}
}

func testJobSecretEnv(t *testing.T, s *kubetest.Server, cs *kubernetes.Clientset) {
	const secret = "s3cr3t-value-7f1d"
	j := newJob(t, s, cs)
	j.Env = map[string]string{"PLAIN": "visible", "TOKEN": secret}
	mustValidate(t, j)
	j.SetSensitive(map[string][]cty.Path{"env": {cty.IndexStringPath("TOKEN")}})
	env, buf := jobEnv(t, "k8s_job.secret")
	name := j.jobName(env)
	playKubelet(t, cs, j.Namespace, name, func(int, *corev1.Pod) *corev1.PodStatus { return terminated(0, "Completed", "") })
	if _, err := j.Run(t.Context(), env); err != nil {
		t.Fatalf("Run() = %v; printed:\n%s", err, buf)
	}
	job, err := cs.BatchV1().Jobs(j.Namespace).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	vars := job.Spec.Template.Spec.Containers[0].Env
	if len(vars) != 2 || vars[0].Value != "visible" || vars[1].Value != "" || vars[1].ValueFrom == nil ||
		vars[1].ValueFrom.SecretKeyRef.Name != name || vars[1].ValueFrom.SecretKeyRef.Key != "TOKEN" {
		t.Errorf("env = %+v: want PLAIN's value, TOKEN from Secret %s", vars, name)
	}
	if strings.Contains(fmt.Sprint(job), secret) || strings.Contains(buf.String(), secret) {
		t.Error("the sensitive value is in the Job or in the output")
	}
	sec, err := cs.CoreV1().Secrets(j.Namespace).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if string(sec.Data["TOKEN"]) != secret || len(sec.Data) != 1 {
		t.Errorf("Secret data keys %d, TOKEN %q", len(sec.Data), sec.Data["TOKEN"])
	}
	if err := j.Destroy(t.Context(), env, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Secrets(j.Namespace).Get(t.Context(), name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("Secret after destroy: %v, want it gone", err)
	}
}

func testJobFailures(t *testing.T, s *kubetest.Server, cs *kubernetes.Clientset) {
	for _, tc := range []struct {
		name     string
		deadline tasks.Duration
		kubelet  kubelet
		want     []string
	}{
		{"exit 3", "", func(int, *corev1.Pod) *corev1.PodStatus { return terminated(3, "Error", "") },
			[]string{"failed (BackoffLimitExceeded)", "exited with code 3"}},
		{"OOMKilled", "", func(int, *corev1.Pod) *corev1.PodStatus { return terminated(137, "OOMKilled", "") },
			[]string{"exited with code 137 (OOMKilled)"}},
		{"image missing", "", func(int, *corev1.Pod) *corev1.PodStatus {
			return waiting("ImagePullBackOff", `Back-off pulling image "localhost:32000/nothere:1"`)
		}, []string{"cannot run", "ImagePullBackOff", "image localhost:32000/nothere:1 cannot be pulled"}},
		{"image not in the registry", "", func(int, *corev1.Pod) *corev1.PodStatus {
			return waiting("ErrImagePull", `failed to pull and unpack image "localhost:32000/nothere:1": localhost:32000/nothere:1: not found`)
		}, []string{"ErrImagePull", "image localhost:32000/nothere:1 cannot be pulled", "not found"}},
		{"deadline", "2s", func(int, *corev1.Pod) *corev1.PodStatus { return &corev1.PodStatus{Phase: corev1.PodRunning} },
			[]string{"failed (DeadlineExceeded)"}},
		{"unschedulable", "", func(int, *corev1.Pod) *corev1.PodStatus {
			return &corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled,
				Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable, Message: "0/3 nodes are available: 3 Insufficient cpu.",
				LastTransitionTime: metav1.NewTime(time.Now().Add(-time.Minute))}}}
		}, []string{"Unschedulable", "0/3 nodes are available: 3 Insufficient cpu."}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := newJob(t, s, cs)
			j.ActiveDeadline = tc.deadline
			mustValidate(t, j)
			env, buf := jobEnv(t, "k8s_job.fails")
			playKubelet(t, cs, j.Namespace, j.jobName(env), tc.kubelet)
			_, err := j.Run(t.Context(), env)
			if err == nil {
				t.Fatalf("Run() succeeded; printed:\n%s", buf)
			}
			for _, want := range tc.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("Run() = %v\nwant it to say %q", err, want)
				}
			}
		})
	}
}

func testJobRetry(t *testing.T, s *kubetest.Server, cs *kubernetes.Clientset) {
	j := newJob(t, s, cs)
	mustValidate(t, j)
	env, _ := jobEnv(t, "k8s_job.retry")
	name := j.jobName(env)
	attempt := 0
	playKubelet(t, cs, j.Namespace, name, func(int, *corev1.Pod) *corev1.PodStatus {
		attempt++
		if attempt == 1 {
			return terminated(3, "Error", "")
		}
		return terminated(0, "Completed", "")
	})
	if _, err := j.Run(t.Context(), env); err == nil {
		t.Fatal("the first attempt succeeded")
	}
	first, err := cs.BatchV1().Jobs(j.Namespace).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	env2, buf := jobEnv(t, "k8s_job.retry")
	if _, err := j.Run(t.Context(), env2); err != nil {
		t.Fatalf("the second attempt: %v; printed:\n%s", err, buf)
	}
	second, err := cs.BatchV1().Jobs(j.Namespace).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if second.UID == first.UID || !strings.Contains(buf.String(), "failed in an earlier attempt") {
		t.Errorf("the second attempt adopted the failed Job; printed:\n%s", buf)
	}
}

func testJobInterrupted(t *testing.T, s *kubetest.Server, cs *kubernetes.Clientset) {
	j := newJob(t, s, cs)
	mustValidate(t, j)
	env, buf := jobEnv(t, "k8s_job.interrupted")
	name := j.jobName(env)
	running := make(chan struct{}, 1)
	playKubelet(t, cs, j.Namespace, name, func(int, *corev1.Pod) *corev1.PodStatus {
		running <- struct{}{}
		now := metav1.Now()
		return &corev1.PodStatus{Phase: corev1.PodRunning, StartTime: &now, ContainerStatuses: []corev1.ContainerStatus{{Name: containerName,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}}}}
	})
	ctx, cancel := context.WithCancel(t.Context())
	go func() { <-running; time.Sleep(500 * time.Millisecond); cancel() }()
	if _, err := j.Run(ctx, env); err != context.Canceled {
		t.Fatalf("Run() = %v, want context.Canceled; printed:\n%s", err, buf)
	}
	if _, err := cs.BatchV1().Jobs(j.Namespace).Get(t.Context(), name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("Job after Ctrl-C: get = %v, want it gone", err)
	}
	if pods, err := typedPods(t.Context(), cs, j.Namespace, name); err != nil || len(pods) != 0 {
		t.Errorf("pods after Ctrl-C: %d (%v), want none", len(pods), err)
	}
	if !strings.Contains(buf.String(), "stopped: deleted Job") {
		t.Errorf("printed:\n%s\nwant it to say the Job was deleted", buf)
	}
}

func testJobDestroyProbe(t *testing.T, s *kubetest.Server, cs *kubernetes.Clientset) {
	j := newJob(t, s, cs)
	mustValidate(t, j)
	env, _ := jobEnv(t, "k8s_job.destroy")
	playKubelet(t, cs, j.Namespace, j.jobName(env), func(int, *corev1.Pod) *corev1.PodStatus { return terminated(0, "Completed", "") })
	out, err := j.Run(t.Context(), env)
	if err != nil {
		t.Fatal(err)
	}
	if drift, err := j.Probe(t.Context(), env, out); drift != "" || err != nil {
		t.Errorf("Probe() of a completed Job = %q, %v; want no drift", drift, err)
	}
	if err := j.Destroy(t.Context(), env, out); err != nil {
		t.Fatal(err)
	}
	list, err := cs.BatchV1().Jobs(j.Namespace).List(t.Context(), metav1.ListOptions{})
	if err != nil || len(list.Items) != 0 {
		t.Errorf("Jobs after destroy: %d (%v), want none", len(list.Items), err)
	}
	if drift, err := j.Probe(t.Context(), env, out); !strings.Contains(drift, "is gone") || err != nil {
		t.Errorf("Probe() of a deleted Job = %q, %v; want it gone", drift, err)
	}
	if err := j.Destroy(t.Context(), env, out); err != nil { // again: nothing left
		t.Errorf("a second Destroy() = %v", err)
	}
}

// testJobDestroyOrphanPods: Karmada deletes a member's Job without waiting for its
// pods, so destroy can find a member with the step's pods and no Job.
func testJobDestroyOrphanPods(t *testing.T, s *kubetest.Server, cs *kubernetes.Clientset) {
	j := newJob(t, s, cs)
	mustValidate(t, j)
	env, buf := jobEnv(t, "k8s_job.orphans")
	name := j.jobName(env)
	labels := j.labels(env, name)
	labels[jobNameLabel] = name
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name + "-x1", Labels: labels},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: containerName, Image: "busybox"}}}}
	if _, err := cs.CoreV1().Pods(j.Namespace).Create(t.Context(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := j.Destroy(t.Context(), env, nil); err != nil {
		t.Fatal(err)
	}
	if pods, err := typedPods(t.Context(), cs, j.Namespace, name); err != nil || len(pods) != 0 {
		t.Errorf("pods after destroy: %d (%v), want none; printed:\n%s", len(pods), err, buf)
	}
	if !strings.Contains(buf.String(), "deleted 1 pod(s) of the step's deleted Jobs") {
		t.Errorf("printed:\n%s\nwant it to say the pod was deleted", buf)
	}
}

func mustValidate(t *testing.T, j *Job) {
	t.Helper()
	if err := j.Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestJobPolicy(t *testing.T) {
	env := &tasks.Env{Lineage: "L", Address: "k8s_job.fan"}
	for _, tc := range []struct {
		name string
		job  *Job
		want string
	}{
		{"named clusters, duplicated", &Job{Clusters: []string{"member1", "member2"}},
			`{"clusterAffinity":{"clusterNames":["member1","member2"]},"replicaScheduling":{"replicaSchedulingType":"Duplicated"}}`},
		{"by label, divided", &Job{ClusterLabels: map[string]string{"env": "lab"}, DivideReplicas: true},
			`{"clusterAffinity":{"labelSelector":{"matchLabels":{"env":"lab"}}},"replicaScheduling":{"replicaDivisionPreference":"Weighted","replicaSchedulingType":"Divided"}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.job.policy(env, "flow-fan-x")
			placement, _ := json.Marshal(p["spec"].(map[string]any)["placement"])
			if string(placement) != tc.want {
				t.Errorf("placement = %s\nwant        %s", placement, tc.want)
			}
			selectors, _ := json.Marshal(p["spec"].(map[string]any)["resourceSelectors"])
			if want := `[{"apiVersion":"batch/v1","kind":"Job","name":"flow-fan-x"}]`; string(selectors) != want {
				t.Errorf("resourceSelectors = %s, want %s", selectors, want)
			}
		})
	}
	withSecret := &Job{Clusters: []string{"member1"}, Env: map[string]string{"T": "s"}}
	withSecret.SetSensitive(map[string][]cty.Path{"env": {cty.IndexStringPath("T")}})
	selectors, _ := json.Marshal(withSecret.policy(env, "flow-fan-x")["spec"].(map[string]any)["resourceSelectors"])
	if !strings.Contains(string(selectors), `{"apiVersion":"v1","kind":"Secret","name":"flow-fan-x"}`) {
		t.Errorf("a sensitive env value's Secret is not propagated with the Job: %s", selectors)
	}
}
