package kube

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/zclconf/go-cty/cty"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	"github.com/flowdev/flow/tasks"
)

// Karmada's resources a propagated Job needs; the lab's Karmada serves them.
// BindingResource is Karmada's namespaced ResourceBinding resource, which
// tasks/wait reads too.
var (
	policyResource  = schema.GroupVersionResource{Group: "policy.karmada.io", Version: "v1alpha1", Resource: "propagationpolicies"}
	BindingResource = schema.GroupVersionResource{Group: "work.karmada.io", Version: "v1alpha2", Resource: "resourcebindings"}
)

// member is a client of Karmada member cluster name through the cluster proxy of
// plane, Karmada's API server.
func member(plane *cluster, name string) (*cluster, error) {
	cfg := rest.CopyConfig(plane.cfg)
	cfg.Host = strings.TrimRight(cfg.Host, "/") + "/apis/cluster.karmada.io/v1alpha1/clusters/" + name + "/proxy"
	return newCluster(cfg, name, plane.out, plane.logger)
}

// runKarmada creates the Job (and the Secret of sensitive env values) in Karmada's
// API server with a PropagationPolicy of the same name, or adopts what an earlier
// run created, then follows the Job in every member Karmada scheduled it to.
func (j *Job) runKarmada(ctx context.Context, env *tasks.Env, cfg *rest.Config, name string) (tasks.Outputs, error) {
	plane, err := newCluster(cfg, "", env.Stdout, env.Logger)
	if err != nil {
		return nil, err
	}
	results, members, err := j.runPropagated(ctx, env, plane, name)
	if ctx.Err() != nil {
		j.stopKarmada(env, plane, name, members)
		return nil, ctx.Err()
	}
	if err != nil {
		return nil, err
	}
	values := map[string]cty.Value{}
	for _, m := range members {
		values[m.name] = results[m.name].value()
	}
	first := results[members[0].name]
	return tasks.Outputs{
		"job": cty.StringVal(name), "namespace": cty.StringVal(j.namespace()),
		"exit_code": cty.NumberIntVal(0), "node": cty.StringVal(""), "pod": cty.StringVal(""),
		"outputs": stringMap(first.outputs), "members": cty.MapVal(values),
	}, nil
}

// runPropagated is runKarmada's work. It returns the members it followed, by name,
// also on failure, so that a stop knows where to look.
func (j *Job) runPropagated(ctx context.Context, env *tasks.Env, plane *cluster, name string) (map[string]stepResult, []*cluster, error) {
	if err := j.deleteOthersKarmada(ctx, env, plane, name); err != nil {
		return nil, nil, err
	}
	if err := j.restartFailed(ctx, plane, name); err != nil {
		return nil, nil, err
	}
	if err := j.applyPolicy(ctx, env, plane, name); err != nil {
		return nil, nil, err
	}
	if err := j.start(ctx, env, plane, name); err != nil {
		return nil, nil, err
	}
	names, err := j.scheduled(ctx, plane, name)
	if err != nil {
		return nil, nil, err
	}
	plane.say("propagated to %s", strings.Join(names, ", "))
	var members []*cluster
	for _, m := range names {
		c, err := member(plane, m)
		if err != nil {
			return nil, members, err
		}
		members = append(members, c)
	}
	results := map[string]stepResult{}
	var mu sync.Mutex
	var failed []error
	var wg sync.WaitGroup
	for _, c := range members {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := j.follow(ctx, c, name, true)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				failed = append(failed, err)
				return
			}
			results[c.name] = res
		}()
	}
	wg.Wait()
	if ctx.Err() != nil {
		return nil, members, ctx.Err()
	}
	if len(failed) > 0 {
		slices.SortFunc(failed, func(a, b error) int { return strings.Compare(a.Error(), b.Error()) })
		_ = plane.annotate(ctx, j.namespace(), name, annotationReported, "true")
		return nil, members, fmt.Errorf("%d of %d members failed:\n%w", len(failed), len(members), errors.Join(failed...))
	}
	return results, members, nil
}

// restartFailed deletes a Job whose failure an earlier attempt reported from
// Karmada and from every member it was scheduled to, and waits until it is gone
// there, so that start creates it again.
func (j *Job) restartFailed(ctx context.Context, plane *cluster, name string) error {
	ns := j.namespace()
	old, err := plane.getJob(ctx, ns, name)
	if apierrors.IsNotFound(err) || err == nil && old.Metadata.Annotations[annotationReported] == "" {
		return nil
	}
	if err != nil {
		return fmt.Errorf("get Job %s/%s: %w", ns, name, err)
	}
	plane.say("Job %s/%s failed in an earlier attempt; deleting it everywhere to start it again", ns, name)
	members := bindingMembers(ctx, plane, ns, name)
	if err := j.deleteFromKarmada(ctx, plane, name); err != nil {
		return err
	}
	for _, m := range members {
		c, err := member(plane, m)
		if err == nil {
			err = c.remove(ctx, jobsResource, ns, name)
		}
		if err == nil {
			err = c.waitGone(ctx, ns, name)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", m, err)
		}
	}
	return plane.waitGone(ctx, ns, name)
}

// bindingMembers are the members the Job's ResourceBinding names now; none when
// there is none, or it has none (yet).
func bindingMembers(ctx context.Context, plane *cluster, ns, name string) []string {
	obj, err := plane.dyn.Resource(BindingResource).Namespace(ns).Get(ctx, name+"-job", metav1.GetOptions{})
	if err != nil {
		return nil
	}
	return membersOf(obj)
}

// membersOf reads a ResourceBinding's spec.clusters names, sorted.
func membersOf(obj *unstructured.Unstructured) []string {
	var members []string
	clusters, _, _ := unstructured.NestedSlice(obj.Object, "spec", "clusters")
	for _, c := range clusters {
		if m, ok := c.(map[string]any); ok {
			if n, ok := m["name"].(string); ok {
				members = append(members, n)
			}
		}
	}
	slices.Sort(members)
	return members
}

// policy is the PropagationPolicy that propagates the Job (and its Secret) named name.
func (j *Job) policy(env *tasks.Env, name string) map[string]any {
	selectors := []any{map[string]any{"apiVersion": "batch/v1", "kind": "Job", "name": name}}
	if len(j.secretData()) > 0 {
		selectors = append(selectors, map[string]any{"apiVersion": "v1", "kind": "Secret", "name": name})
	}
	affinity := map[string]any{"clusterNames": j.Clusters}
	if len(j.ClusterLabels) > 0 {
		affinity["labelSelector"] = map[string]any{"matchLabels": j.ClusterLabels}
	}
	scheduling := map[string]any{"replicaSchedulingType": "Duplicated"}
	if j.DivideReplicas {
		scheduling = map[string]any{"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted"}
	}
	return jsonObject(map[string]any{
		"apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
		"metadata": map[string]any{"name": name, "namespace": j.namespace(), "labels": j.labels(env, name)},
		"spec": map[string]any{
			"resourceSelectors": selectors,
			"placement":         map[string]any{"clusterAffinity": affinity, "replicaScheduling": scheduling},
		},
	})
}

// applyPolicy creates the PropagationPolicy, or leaves the one an earlier run made.
func (j *Job) applyPolicy(ctx context.Context, env *tasks.Env, plane *cluster, name string) error {
	_, err := plane.dyn.Resource(policyResource).Namespace(j.namespace()).Create(ctx, toUnstructured(j.policy(env, name)), metav1.CreateOptions{FieldManager: defaultFieldManager})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create PropagationPolicy %s/%s: %w", j.namespace(), name, err)
	}
	return nil
}

// scheduled waits until Karmada scheduled the Job and returns its members, by name.
// A binding no cluster fits fails with the scheduler's message.
func (j *Job) scheduled(ctx context.Context, plane *cluster, name string) ([]string, error) {
	rb := name + "-job"
	for {
		obj, err := plane.dyn.Resource(BindingResource).Namespace(j.namespace()).Get(ctx, rb, metav1.GetOptions{})
		switch {
		case err == nil:
			if members := membersOf(obj); len(members) > 0 {
				return members, nil
			}
			conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
			for _, c := range conds {
				if m, ok := c.(map[string]any); ok && m["type"] == "Scheduled" && m["status"] == "False" && m["reason"] == "NoClusterFit" {
					return nil, fmt.Errorf("karmada cannot place Job %s/%s: %v", j.namespace(), name, m["message"])
				}
			}
		case apierrors.IsNotFound(err), TransientFault(err) != "":
		default:
			return nil, fmt.Errorf("get ResourceBinding %s/%s: %w", j.namespace(), rb, err)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(jobPoll):
		}
	}
}

// deleteOthersKarmada deletes the instance's Jobs of other names from Karmada: what
// an earlier run of a changed step left.
func (j *Job) deleteOthersKarmada(ctx context.Context, env *tasks.Env, plane *cluster, name string) error {
	names, err := plane.names(ctx, jobsResource, j.namespace(), labelInstance+"="+instanceKey(env))
	if err != nil {
		return fmt.Errorf("list the step's Jobs in %s: %w", j.namespace(), err)
	}
	for _, old := range names {
		if old == name {
			continue
		}
		plane.say("deleting Job %s/%s, an earlier run's of this step with other inputs", j.namespace(), old)
		if err := j.deleteFromKarmada(ctx, plane, old); err != nil {
			return err
		}
	}
	return nil
}

// deleteFromKarmada deletes the Job, its Secret and its policy from Karmada, which
// then deletes them from the members.
func (j *Job) deleteFromKarmada(ctx context.Context, plane *cluster, name string) error {
	ns := j.namespace()
	return errors.Join(plane.remove(ctx, jobsResource, ns, name), plane.remove(ctx, secretsResource, ns, name),
		plane.remove(ctx, policyResource, ns, name))
}

// stopKarmada stops the members' pods first (Karmada's deletion would have each
// member's garbage collector give them their full grace period), then deletes the
// Job from Karmada and from each member, waiting until the members' pods are gone.
func (j *Job) stopKarmada(env *tasks.Env, plane *cluster, name string, members []*cluster) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, c := range members {
		c.stopPods(ctx, j.namespace(), name)
	}
	if err := j.deleteFromKarmada(ctx, plane, name); err != nil {
		fmt.Fprintf(env.Stderr, "stopping: %v\n", err)
	}
	j.stop(env, members, name)
}
