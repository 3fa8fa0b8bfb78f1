package kube

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/flowdev/flow/tasks"
)

// Destroy deletes every Job and Secret the instance created (they carry its
// instance label), with their pods; with Karmada, also its PropagationPolicies, and
// the Jobs in the members it ran in (recorded), was scheduled to or names. It does
// not rely on the recorded outputs: an attempt that was killed created its Job all
// the same.
func (j *Job) Destroy(ctx context.Context, env *tasks.Env, recorded tasks.Outputs) error {
	cfg, err := RESTConfig(j.Kubeconfig, j.Context)
	if err != nil {
		return err
	}
	c, err := newCluster(cfg, "", env.Stdout, env.Logger)
	if err != nil {
		return err
	}
	if !j.karmada() {
		return j.deleteLabelled(ctx, env, c)
	}
	names, err := c.names(ctx, jobsResource, j.namespace(), labelInstance+"="+instanceKey(env))
	if err != nil {
		return fmt.Errorf("list the step's Jobs in %s: %w", j.namespace(), err)
	}
	members := map[string]bool{}
	for _, m := range j.Clusters {
		members[m] = true
	}
	if v, ok := recorded["members"]; ok && v.IsKnown() && !v.IsNull() {
		for it := v.ElementIterator(); it.Next(); {
			m, _ := it.Element()
			members[m.AsString()] = true
		}
	}
	for _, name := range names {
		for _, m := range bindingMembers(ctx, c, j.namespace(), name) {
			members[m] = true
		}
	}
	var clusters []*cluster
	for _, m := range slices.Sorted(maps.Keys(members)) {
		mc, err := member(c, m)
		if err != nil {
			return fmt.Errorf("%s: %w", m, err)
		}
		clusters = append(clusters, mc)
		for _, name := range names { // before Karmada's deletion gives them their full grace period
			mc.stopPods(ctx, j.namespace(), name)
		}
	}
	for _, name := range names {
		if err := j.deleteFromKarmada(ctx, c, name); err != nil {
			return err
		}
		c.say("deleted Job %s/%s from Karmada", j.namespace(), name)
	}
	var errs []error
	for _, mc := range clusters {
		if err := j.deleteLabelled(ctx, env, mc); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", mc.name, err))
		}
	}
	return errors.Join(errs...)
}

// deleteLabelled deletes the instance's Jobs and Secrets in c, waiting until the
// Jobs' pods are gone: those of a Job gone already too (Karmada deletes a member's
// Job without waiting for its pods).
func (j *Job) deleteLabelled(ctx context.Context, env *tasks.Env, c *cluster) error {
	ns, sel := j.namespace(), labelInstance+"="+instanceKey(env)
	jobs, err := c.names(ctx, jobsResource, ns, sel)
	if err != nil {
		return fmt.Errorf("list the step's Jobs in %s: %w", ns, err)
	}
	secrets, err := c.names(ctx, secretsResource, ns, sel)
	if err != nil {
		return fmt.Errorf("list the step's Secrets in %s: %w", ns, err)
	}
	pods, err := c.podsSelected(ctx, ns, sel)
	if err != nil {
		return fmt.Errorf("list the step's pods in %s: %w", ns, err)
	}
	if len(jobs) == 0 && len(secrets) == 0 && len(pods) == 0 {
		c.say("no Job of this step is left in %s", ns)
		return nil
	}
	for _, s := range secrets {
		if err := c.remove(ctx, secretsResource, ns, s); err != nil {
			return err
		}
	}
	for _, name := range jobs {
		c.stopPods(ctx, ns, name)
		if err := c.remove(ctx, jobsResource, ns, name); err != nil {
			return err
		}
		if err := c.waitGone(ctx, ns, name); err != nil {
			return err
		}
		c.say("deleted Job %s/%s and its pods", ns, name)
	}
	if err := c.waitPodsGone(ctx, ns, sel); err != nil {
		return err
	}
	if len(jobs) == 0 && len(pods) > 0 {
		c.say("deleted %d pod(s) of the step's deleted Jobs in %s", len(pods), ns)
	}
	return nil
}

// Probe reports whether the recorded Job is gone or did not complete (in Karmada,
// its status as Karmada aggregates it from the members).
func (j *Job) Probe(ctx context.Context, env *tasks.Env, recorded tasks.Outputs) (string, error) {
	v, ok := recorded["job"]
	if !ok || !v.IsKnown() || v.IsNull() {
		return "", nil
	}
	name := v.AsString()
	cfg, err := RESTConfig(j.Kubeconfig, j.Context)
	if err != nil {
		return "", err
	}
	c, err := newCluster(cfg, "", env.Stdout, env.Logger)
	if err != nil {
		return "", err
	}
	job, err := c.getJob(ctx, j.namespace(), name)
	if apierrors.IsNotFound(err) {
		return fmt.Sprintf("Job %s/%s is gone", j.namespace(), name), nil
	}
	if err != nil {
		return "", fmt.Errorf("get Job %s/%s: %w", j.namespace(), name, err)
	}
	if _, ok := job.conditionTrue("Complete"); !ok {
		return fmt.Sprintf("Job %s/%s has not completed", j.namespace(), name), nil
	}
	return "", nil
}

var (
	_ tasks.Destroyer = (*Job)(nil)
	_ tasks.Prober    = (*Job)(nil)
)
