package kube

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/zclconf/go-cty/cty"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flowdev/flow/tasks"
)

// jobPoll is how often a followed Job and its pods are looked at besides when a
// watch says they changed.
const jobPoll = 2 * time.Second

// stepResult is how the Job ended in one cluster.
type stepResult struct {
	exitCode int
	node     string
	pod      string
	outputs  map[string]string
}

func (r stepResult) value() cty.Value {
	return cty.ObjectVal(map[string]cty.Value{
		"exit_code": cty.NumberIntVal(int64(r.exitCode)),
		"node":      cty.StringVal(r.node),
		"pod":       cty.StringVal(r.pod),
		"outputs":   stringMap(r.outputs),
	})
}

func stringMap(m map[string]string) cty.Value {
	if len(m) == 0 {
		return cty.MapValEmpty(cty.String)
	}
	vals := make(map[string]cty.Value, len(m))
	for k, v := range m {
		vals[k] = cty.StringVal(v)
	}
	return cty.MapVal(vals)
}

// Run creates the Job, or adopts the one an earlier run of the same step started,
// and follows it until it completed. Ctrl-C and flow's timeout delete it with its
// pods before Run returns.
func (j *Job) Run(ctx context.Context, env *tasks.Env) (tasks.Outputs, error) {
	cfg, err := RESTConfig(j.Kubeconfig, j.Context)
	if err != nil {
		return nil, err
	}
	name := j.jobName(env)
	if j.karmada() {
		return j.runKarmada(ctx, env, cfg, name)
	}
	c, err := newCluster(cfg, "", env.Stdout, env.Logger)
	if err != nil {
		return nil, err
	}
	res, err := j.runIn(ctx, env, c, name)
	if ctx.Err() != nil {
		j.stop(env, []*cluster{c}, name)
		return nil, ctx.Err()
	}
	if err != nil {
		return nil, err
	}
	return tasks.Outputs{
		"job": cty.StringVal(name), "namespace": cty.StringVal(j.namespace()),
		"exit_code": cty.NumberIntVal(int64(res.exitCode)), "node": cty.StringVal(res.node),
		"pod": cty.StringVal(res.pod), "outputs": stringMap(res.outputs),
		"members": cty.MapValEmpty(memberOutputType),
	}, nil
}

// runIn starts (or adopts) the Job in c and follows it.
func (j *Job) runIn(ctx context.Context, env *tasks.Env, c *cluster, name string) (stepResult, error) {
	if err := j.deleteOthers(ctx, env, c, name); err != nil {
		return stepResult{}, err
	}
	if err := j.start(ctx, env, c, name); err != nil {
		return stepResult{}, err
	}
	return j.follow(ctx, c, name, false)
}

// start creates the Job named name in c, and first the Secret of its sensitive env
// values. A Job of that name that is there already is adopted, unless a run already
// reported its failure: then it is deleted and created again (a retry).
func (j *Job) start(ctx context.Context, env *tasks.Env, c *cluster, name string) error {
	ns := j.namespace()
	label := fmt.Sprintf("Job %s/%s", ns, name)
	old, err := c.getJob(ctx, ns, name)
	switch {
	case err == nil && old.Metadata.DeletionTimestamp == nil && old.Metadata.Annotations[annotationReported] == "":
		c.say("adopting %s, which an earlier run created %s ago", label, time.Since(old.Metadata.CreationTimestamp).Round(time.Second))
		return nil
	case err == nil:
		c.say("%s failed in an earlier attempt; deleting it to start it again", label)
		if err := c.remove(ctx, jobsResource, ns, name); err != nil {
			return err
		}
		if err := c.waitGone(ctx, ns, name); err != nil {
			return err
		}
	case !apierrors.IsNotFound(err):
		return fmt.Errorf("get %s: %w", label, err)
	}
	if err := j.applySecret(ctx, env, c, name); err != nil {
		return err
	}
	_, err = c.dyn.Resource(jobsResource).Namespace(ns).Create(ctx, toUnstructured(j.jobSpec(env, name)), metav1.CreateOptions{FieldManager: defaultFieldManager})
	switch {
	case apierrors.IsAlreadyExists(err): // a run that raced this one: the same step
		c.say("adopting %s, created meanwhile", label)
	case err != nil:
		return fmt.Errorf("create %s: %w", label, err)
	default:
		c.say("created %s", label)
	}
	return nil
}

// deleteOthers deletes the instance's Jobs of other names in c, with their Secrets:
// what an earlier run of a changed step left.
func (j *Job) deleteOthers(ctx context.Context, env *tasks.Env, c *cluster, name string) error {
	ns := j.namespace()
	names, err := c.names(ctx, jobsResource, ns, labelInstance+"="+instanceKey(env))
	if err != nil {
		return fmt.Errorf("list the step's Jobs in %s: %w", ns, err)
	}
	for _, old := range names {
		if old == name {
			continue
		}
		c.say("deleting Job %s/%s, an earlier run's of this step with other inputs", ns, old)
		c.stopPods(ctx, ns, old)
		if err := errors.Join(c.remove(ctx, jobsResource, ns, old), c.remove(ctx, secretsResource, ns, old)); err != nil {
			return err
		}
	}
	return nil
}

// labels are the Job's and its pods' labels: the user's, then flow's.
func (j *Job) labels(env *tasks.Env, name string) map[string]string {
	l := maps.Clone(j.Labels)
	if l == nil {
		l = map[string]string{}
	}
	l[labelInstance] = instanceKey(env)
	l[labelStep] = name
	return l
}

// jobSpec is the Job named name as j describes it.
func (j *Job) jobSpec(env *tasks.Env, name string) map[string]any {
	backoff := 0
	if j.BackoffLimit != nil {
		backoff = *j.BackoffLimit
	}
	parallel := 1
	if j.Parallelism != nil {
		parallel = *j.Parallelism
	}
	container := map[string]any{
		"name": containerName, "image": j.Image, "command": j.Command, "args": j.Args,
		"env": j.envVars(name), "resources": j.Resources,
		"terminationMessagePolicy": "File",
	}
	spec := map[string]any{
		"backoffLimit": backoff, "parallelism": parallel, "completions": parallel,
		"template": map[string]any{
			"metadata": map[string]any{"labels": j.labels(env, name)},
			"spec": map[string]any{
				"restartPolicy": "Never", "containers": []any{container},
				"nodeSelector": j.NodeSelector, "serviceAccountName": j.ServiceAccount,
			},
		},
	}
	if j.ActiveDeadline != "" {
		d, _ := j.ActiveDeadline.Parse()
		spec["activeDeadlineSeconds"] = int64(d.Round(time.Second) / time.Second)
	}
	return jsonObject(map[string]any{
		"apiVersion": "batch/v1", "kind": "Job",
		"metadata": map[string]any{"name": name, "namespace": j.namespace(), "labels": j.labels(env, name),
			"annotations": map[string]string{annotationAddress: env.Address}},
		"spec": spec,
	})
}

// jsonObject is v as JSON's data model (what an unstructured object holds), empty
// values left out.
func jsonObject(v map[string]any) map[string]any {
	data, err := json.Marshal(v)
	if err != nil {
		panic(err) // maps of strings, numbers and lists: always encodable
	}
	var out map[string]any
	_ = json.Unmarshal(data, &out)
	return dropEmpty(out).(map[string]any)
}

// dropEmpty leaves out null, "" and empty lists and maps, as omitempty would.
func dropEmpty(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			e = dropEmpty(e)
			if e == nil || e == "" {
				delete(v, k)
				continue
			}
			if m, ok := e.(map[string]any); ok && len(m) == 0 {
				delete(v, k)
				continue
			}
			if l, ok := e.([]any); ok && len(l) == 0 {
				delete(v, k)
				continue
			}
			v[k] = e
		}
		return v
	case []any:
		for i, e := range v {
			v[i] = dropEmpty(e)
		}
	}
	return v
}

// envVars are the container's variables, in name order; a sensitive value is a
// reference into the Secret named like the Job.
func (j *Job) envVars(name string) []map[string]any {
	var vars []map[string]any
	for _, k := range slices.Sorted(maps.Keys(j.Env)) {
		if j.sensitiveEnv[k] {
			vars = append(vars, map[string]any{"name": k, "valueFrom": map[string]any{
				"secretKeyRef": map[string]any{"name": name, "key": k}}})
			continue
		}
		vars = append(vars, map[string]any{"name": k, "value": j.Env[k]})
	}
	return vars
}

// secretData is the Secret's data: the sensitive env values; nil without any.
func (j *Job) secretData() map[string][]byte {
	var data map[string][]byte
	for k, v := range j.Env {
		if j.sensitiveEnv[k] {
			if data == nil {
				data = map[string][]byte{}
			}
			data[k] = []byte(v)
		}
	}
	return data
}

// applySecret creates (or updates) the Secret of the sensitive env values, named
// like the Job; there is none without any.
func (j *Job) applySecret(ctx context.Context, env *tasks.Env, c *cluster, name string) error {
	data := j.secretData()
	if len(data) == 0 {
		return nil
	}
	secret := toUnstructured(jsonObject(map[string]any{
		"apiVersion": "v1", "kind": "Secret",
		"metadata": map[string]any{"name": name, "namespace": j.namespace(), "labels": j.labels(env, name)},
		"data":     data, // []byte: base64 in JSON, as the API wants
	}))
	secrets := c.dyn.Resource(secretsResource).Namespace(j.namespace())
	_, err := secrets.Create(ctx, secret, metav1.CreateOptions{FieldManager: defaultFieldManager})
	if apierrors.IsAlreadyExists(err) {
		old, gerr := secrets.Get(ctx, name, metav1.GetOptions{})
		if err = gerr; err == nil {
			secret.SetResourceVersion(old.GetResourceVersion())
			_, err = secrets.Update(ctx, secret, metav1.UpdateOptions{FieldManager: defaultFieldManager})
		}
	}
	if err != nil {
		return fmt.Errorf("store the sensitive env values in Secret %s/%s: %w", j.namespace(), name, err)
	}
	return nil
}

// follow watches the Job named name in c until it completed or failed, streaming
// each pod's log. With appear, a Job that is not there yet is waited for (Karmada
// creates it in the member).
func (j *Job) follow(ctx context.Context, c *cluster, name string, appear bool) (stepResult, error) {
	ns := j.namespace()
	label := fmt.Sprintf("Job %s/%s", ns, name)
	logs := newPodLogs(ctx, c, ns)
	defer logs.close()
	tries := map[string]int{}
	unschedulable := j.unschedulable
	if unschedulable == 0 {
		unschedulable = defaultUnschedulable
	}
	tick := time.NewTicker(jobPoll)
	defer tick.Stop()
	wake := make(chan struct{}, 1)
	watchCtx, stopWatches := context.WithCancel(ctx)
	defer stopWatches()
	go c.watch(watchCtx, jobsResource, ns, metav1.ListOptions{FieldSelector: "metadata.name=" + name}, wake)
	go c.watch(watchCtx, podsResource, ns, metav1.ListOptions{LabelSelector: jobNameLabel + "=" + name}, wake)
	for {
		job, err := c.getJob(ctx, ns, name)
		switch {
		case ctx.Err() != nil:
			return stepResult{}, ctx.Err()
		case apierrors.IsNotFound(err) && appear:
		case apierrors.IsNotFound(err):
			return stepResult{}, fmt.Errorf("%s%s was deleted while it ran", c.prefix(), label)
		case err != nil && TransientFault(err) != "":
			c.logger.Debug("get job", "error", err)
		case err != nil:
			return stepResult{}, fmt.Errorf("%sget %s: %w", c.prefix(), label, err)
		default:
			pods, err := c.pods(ctx, ns, name)
			if err != nil && TransientFault(err) == "" {
				return stepResult{}, fmt.Errorf("%slist the pods of %s: %w", c.prefix(), label, err)
			}
			for _, p := range pods {
				if _, seen := tries[p.Metadata.UID]; !seen {
					tries[p.Metadata.UID] = len(tries) + 1
					if n := tries[p.Metadata.UID]; n > 1 {
						c.say("pod %s (try %d)", p.Metadata.Name, n)
					} else {
						c.say("pod %s", p.Metadata.Name)
					}
				}
				logs.follow(p)
			}
			// Succeeded pods are final: counting them saves the Job controller's
			// batching (a second or more) before it says Complete.
			if _, ok := job.conditionTrue("Complete"); ok || allSucceeded(job, pods) {
				logs.wait(5 * time.Second)
				return succeeded(pods)
			}
			if failed, ok := job.conditionTrue("Failed"); ok {
				logs.wait(5 * time.Second)
				_ = c.annotate(ctx, ns, name, annotationReported, "true") // without it, the next attempt reports the same failure again
				return stepResult{}, fmt.Errorf("%s%s failed (%s): %s", c.prefix(), label, failed.Reason, failureWhy(pods, logs, failed.Message))
			}
			if why := stuck(pods, unschedulable); why != "" {
				_ = c.annotate(ctx, ns, name, annotationReported, "true")
				return stepResult{}, fmt.Errorf("%s%s cannot run: %s", c.prefix(), label, why)
			}
		}
		select {
		case <-ctx.Done():
			return stepResult{}, ctx.Err()
		case <-tick.C:
		case <-wake:
		}
	}
}

// allSucceeded reports whether as many of the Job's pods succeeded as it needs.
func allSucceeded(job *jobObject, pods []podObject) bool {
	want := 1
	if job.Spec.Completions != nil {
		want = *job.Spec.Completions
	}
	n := 0
	for _, p := range pods {
		if p.succeeded() {
			n++
		}
	}
	return n >= want
}

// succeeded is the result of the Job's last pod that succeeded.
func succeeded(pods []podObject) (stepResult, error) {
	for _, p := range slices.Backward(pods) {
		if !p.succeeded() {
			continue
		}
		res := stepResult{node: p.Spec.NodeName, pod: p.Metadata.Name, outputs: map[string]string{}}
		s, ok := p.step()
		if !ok || s.State.Terminated == nil {
			return res, nil
		}
		res.exitCode = s.State.Terminated.ExitCode
		out, err := parseOutputs(s.State.Terminated.Message)
		if err != nil {
			return res, fmt.Errorf("pod %s: %w", p.Metadata.Name, err)
		}
		res.outputs = out
		return res, nil
	}
	return stepResult{outputs: map[string]string{}}, nil // the pods are gone (a TTL): nothing to read
}

// parseOutputs reads a termination message: empty, or a JSON object whose string
// values are kept as they are and other values as JSON text.
func parseOutputs(message string) (map[string]string, error) {
	out := map[string]string{}
	if strings.TrimSpace(message) == "" {
		return out, nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal([]byte(message), &obj); err != nil {
		return nil, fmt.Errorf("the termination message is not a JSON object (%v): %q", err, clip(message, 200))
	}
	for k, raw := range obj {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			out[k] = s
			continue
		}
		out[k] = string(raw)
	}
	return out, nil
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// failureWhy says why the Job failed, from its last pod that ended: the exit code
// and reason of its container with the last lines of its log; else the Job's own
// message.
func failureWhy(pods []podObject, logs *podLogs, jobMessage string) string {
	for _, p := range slices.Backward(pods) {
		s, ok := p.step()
		if !ok || s.State.Terminated == nil {
			continue
		}
		t := s.State.Terminated
		why := fmt.Sprintf("pod %s exited with code %d", p.Metadata.Name, t.ExitCode)
		if t.Reason != "" && t.Reason != "Error" {
			why += " (" + t.Reason + ")"
		}
		if tail := logs.tail(p.Metadata.Name, 10); tail != "" {
			why += "; its last log lines:\n" + tail
		}
		return why
	}
	if jobMessage != "" {
		return jobMessage
	}
	return "no pod ran to the end"
}

// stuck says why the Job's newest pod cannot start: an image that cannot be pulled,
// a container that cannot be configured, or no node the scheduler finds for it, for
// longer than unschedulable; "" while it may still start.
func stuck(pods []podObject, unschedulable time.Duration) string {
	if len(pods) == 0 {
		return ""
	}
	p := pods[len(pods)-1]
	if p.Status.Phase != "Pending" {
		return ""
	}
	if s, ok := p.step(); ok && s.State.Waiting != nil {
		switch w := s.State.Waiting; w.Reason {
		case "ImagePullBackOff", "ErrImageNeverPull", "InvalidImageName":
			return fmt.Sprintf("pod %s: %s: image %s cannot be pulled: %s", p.Metadata.Name, w.Reason, s.Image, w.Message)
		case "ErrImagePull": // the first failure: final when the registry has no such image
			if strings.Contains(w.Message, "not found") || strings.Contains(w.Message, "manifest unknown") {
				return fmt.Sprintf("pod %s: %s: image %s cannot be pulled: %s", p.Metadata.Name, w.Reason, s.Image, w.Message)
			}
		case "CreateContainerConfigError", "CreateContainerError":
			if time.Since(p.Metadata.CreationTimestamp) > unschedulable {
				return fmt.Sprintf("pod %s: %s: %s", p.Metadata.Name, w.Reason, w.Message)
			}
		}
	}
	for _, c := range p.Status.Conditions {
		if c.Type == "PodScheduled" && c.Status == "False" && c.Reason == "Unschedulable" && time.Since(c.LastTransitionTime) > unschedulable {
			return fmt.Sprintf("pod %s: Unschedulable for %s: %s", p.Metadata.Name, time.Since(c.LastTransitionTime).Round(time.Second), c.Message)
		}
	}
	return ""
}

// stop deletes the Job and its Secret from every cluster in cs after ctx ended
// (Ctrl-C, a timeout), on a context of its own, waiting until the pods are gone.
func (j *Job) stop(env *tasks.Env, cs []*cluster, name string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ns := j.namespace()
	for _, c := range cs {
		c.stopPods(ctx, ns, name)
		err := errors.Join(c.remove(ctx, jobsResource, ns, name), c.remove(ctx, secretsResource, ns, name))
		if err == nil {
			err = c.waitGone(ctx, ns, name)
		}
		if err != nil {
			fmt.Fprintf(env.Stderr, "%sstopping: %v\n", c.prefix(), err)
			continue
		}
		c.say("stopped: deleted Job %s/%s and its pods", ns, name)
	}
}
