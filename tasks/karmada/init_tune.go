package karmada

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/flowdev/flow/tasks"
	"github.com/flowdev/flow/tasks/kube"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
)

// rolloutPoll is how often the task looks at a Deployment it changed.
var rolloutPoll = 2 * time.Second

// tune is what the task changes in one of init's Deployments after init:
// arguments of its first container's command, and whether its pods use the
// host cluster node's network.
type tune struct {
	args        []string
	hostNetwork bool
}

// tunes maps each Deployment the task changes after init to its tune, from
// controller_manager_args and host_network.
func (i *Init) tunes() map[string]tune {
	out := map[string]tune{}
	if len(i.ControllerManagerArgs) > 0 {
		out[controllerManagerDeployment] = tune{args: i.ControllerManagerArgs}
	}
	for _, name := range i.HostNetwork {
		t := out[name]
		t.hostNetwork = true
		out[name] = t
	}
	return out
}

// lacks reports whether Deployment obj lacks some of t.
func (t tune) lacks(obj *unstructured.Unstructured) bool {
	if len(t.args) > 0 && withArgs(containerCommand(obj), t.args) != nil {
		return true
	}
	on, _, _ := unstructured.NestedBool(obj.Object, "spec", "template", "spec", "hostNetwork")
	return t.hostNetwork && !on
}

// ensureTunes makes each Deployment of tunes() in the host namespace as its tune
// says, unless it is so already, and waits until each changed one has rolled
// out (bounded by ctx).
func (i *Init) ensureTunes(ctx context.Context, env *tasks.Env) error {
	tunes := i.tunes()
	if len(tunes) == 0 {
		return nil
	}
	host, err := i.hostClient()
	if err != nil {
		return err
	}
	deployments := host.Resource(deploymentResource).Namespace(i.namespace())
	changed := map[string]int64{}
	for _, name := range slices.Sorted(maps.Keys(tunes)) {
		gen, done, err := patchTune(ctx, env, deployments, name, tunes[name])
		if err != nil {
			return err
		}
		if gen != 0 {
			changed[name] = gen
			fmt.Fprintf(env.Stdout, "%s: %s; waiting for the rollout\n", name, done)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(changed)) {
		if err := waitRolledOut(ctx, env, deployments, name, changed[name]); err != nil {
			return err
		}
		fmt.Fprintf(env.Stdout, "%s rolled out\n", name)
	}
	return nil
}

// patchTune changes Deployment name as t says with one JSON patch that first
// tests the command it read, so a concurrent change fails instead of being
// overwritten. It returns the Deployment's new generation and what it set, or 0
// when nothing was missing.
func patchTune(ctx context.Context, env *tasks.Env, deployments dynamic.ResourceInterface, name string, t tune) (int64, string, error) {
	obj, err := tasks.RetryTransient(ctx, env, kube.TransientFault, func() (*unstructured.Unstructured, error) {
		return deployments.Get(ctx, name, metav1.GetOptions{})
	})
	if err != nil {
		return 0, "", fmt.Errorf("host cluster: get deployment %s: %w", name, err)
	}
	if !t.lacks(obj) {
		return 0, "", nil
	}
	cmd := containerCommand(obj)
	if len(t.args) > 0 && len(cmd) == 0 {
		return 0, "", fmt.Errorf("deployment %s: %w", name, errNoCommand)
	}
	const path = "/spec/template/spec/containers/0/command"
	// karmadactl's pods repel their own kind (required anti-affinity), and two pods on
	// the node's network would want the same ports, so on a one-node host cluster a
	// surge pod never starts and the rollout never ends: replace the old pod first.
	oneAtATime := map[string]any{"type": "RollingUpdate", "rollingUpdate": map[string]any{"maxSurge": 0, "maxUnavailable": 1}}
	var ops []map[string]any
	var done []string
	if len(cmd) > 0 {
		ops = append(ops, map[string]any{"op": "test", "path": path, "value": cmd})
	}
	if next := withArgs(cmd, t.args); len(t.args) > 0 && next != nil {
		ops = append(ops, map[string]any{"op": "replace", "path": path, "value": next})
		done = append(done, "arguments "+strings.Join(t.args, " ")+" set")
	}
	if on, _, _ := unstructured.NestedBool(obj.Object, "spec", "template", "spec", "hostNetwork"); t.hostNetwork && !on {
		// ClusterFirstWithHostNet keeps cluster DNS, by which the components find
		// the Karmada API server's Service.
		ops = append(ops,
			map[string]any{"op": "add", "path": "/spec/template/spec/hostNetwork", "value": true},
			map[string]any{"op": "add", "path": "/spec/template/spec/dnsPolicy", "value": "ClusterFirstWithHostNet"})
		done = append(done, "host network set")
	}
	ops = append(ops, map[string]any{"op": "add", "path": "/spec/strategy", "value": oneAtATime})
	patch, err := json.Marshal(ops)
	if err != nil {
		return 0, "", fmt.Errorf("deployment %s: %w", name, err)
	}
	patched, err := deployments.Patch(ctx, name, types.JSONPatchType, patch, metav1.PatchOptions{FieldManager: "flow"})
	if err != nil {
		return 0, "", fmt.Errorf("host cluster: patch deployment %s: %w", name, err)
	}
	return patched.GetGeneration(), strings.Join(done, ", "), nil
}

// waitRolledOut polls Deployment name until it has observed generation gen and
// every replica is updated and ready with no old one left, as kubectl rollout
// status has it.
func waitRolledOut(ctx context.Context, env *tasks.Env, deployments dynamic.ResourceInterface, name string, gen int64) error {
	last := "not yet looked at"
	for {
		obj, err := tasks.RetryTransient(ctx, env, kube.TransientFault, func() (*unstructured.Unstructured, error) {
			return deployments.Get(ctx, name, metav1.GetOptions{})
		})
		if err != nil {
			return fmt.Errorf("host cluster: wait for the rollout of deployment %s: %w", name, err)
		}
		if last = rolloutProblem(obj, gen); last == "" {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for the rollout of deployment %s (%s): %w", name, last, context.Cause(ctx))
		case <-time.After(rolloutPoll):
		}
	}
}

// rolloutProblem words why Deployment obj has not rolled out generation gen, or
// returns "".
func rolloutProblem(obj *unstructured.Unstructured, gen int64) string {
	want := specReplicas(obj)
	status := func(field string) int64 {
		n, _, _ := unstructured.NestedInt64(obj.Object, "status", field)
		return n
	}
	switch {
	case status("observedGeneration") < gen:
		return fmt.Sprintf("generation %d not yet observed", gen)
	case status("updatedReplicas") < want:
		return fmt.Sprintf("%d/%d replicas updated", status("updatedReplicas"), want)
	case status("replicas") > want:
		return fmt.Sprintf("%d old replicas left", status("replicas")-want)
	case status("readyReplicas") < want:
		return fmt.Sprintf("%d/%d ready", status("readyReplicas"), want)
	}
	return ""
}
