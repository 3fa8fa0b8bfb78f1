package karmada

import (
	"context"
	"encoding/json"
	"fmt"
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

// ensureControllerManagerArgs puts controller_manager_args into the command of
// Deployment karmada-controller-manager in the host namespace, unless they are
// there, and waits until the Deployment has rolled out (bounded by ctx).
func (i *Init) ensureControllerManagerArgs(ctx context.Context, env *tasks.Env) error {
	if len(i.ControllerManagerArgs) == 0 {
		return nil
	}
	host, err := i.hostClient()
	if err != nil {
		return err
	}
	deployments := host.Resource(deploymentResource).Namespace(i.namespace())
	gen, err := patchArgs(ctx, env, deployments, controllerManagerDeployment, i.ControllerManagerArgs)
	if err != nil || gen == 0 {
		return err
	}
	fmt.Fprintf(env.Stdout, "%s: arguments %s set; waiting for the rollout\n", controllerManagerDeployment, strings.Join(i.ControllerManagerArgs, " "))
	if err := waitRolledOut(ctx, env, deployments, controllerManagerDeployment, gen); err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "%s rolled out\n", controllerManagerDeployment)
	return nil
}

// patchArgs sets args in the first container's command of Deployment name with a
// JSON patch that first tests the command it read, so a concurrent change fails
// instead of being overwritten. It returns the Deployment's new generation, or 0
// when args were all there.
func patchArgs(ctx context.Context, env *tasks.Env, deployments dynamic.ResourceInterface, name string, args []string) (int64, error) {
	obj, err := tasks.RetryTransient(ctx, env, kube.TransientFault, func() (*unstructured.Unstructured, error) {
		return deployments.Get(ctx, name, metav1.GetOptions{})
	})
	if err != nil {
		return 0, fmt.Errorf("host cluster: get deployment %s: %w", name, err)
	}
	cmd := containerCommand(obj)
	if len(cmd) == 0 {
		return 0, fmt.Errorf("deployment %s: %w", name, errNoCommand)
	}
	next := withArgs(cmd, args)
	if next == nil {
		return 0, nil
	}
	const path = "/spec/template/spec/containers/0/command"
	// karmadactl's pods repel their own kind (required anti-affinity), so on a host
	// cluster with fewer nodes than replicas+1 a surge pod is never scheduled and the
	// rollout never ends: replace the old pod first instead.
	oneAtATime := map[string]any{"type": "RollingUpdate", "rollingUpdate": map[string]any{"maxSurge": 0, "maxUnavailable": 1}}
	patch, err := json.Marshal([]map[string]any{
		{"op": "test", "path": path, "value": cmd},
		{"op": "replace", "path": path, "value": next},
		{"op": "add", "path": "/spec/strategy", "value": oneAtATime},
	})
	if err != nil {
		return 0, fmt.Errorf("deployment %s: %w", name, err)
	}
	patched, err := deployments.Patch(ctx, name, types.JSONPatchType, patch, metav1.PatchOptions{FieldManager: "flow"})
	if err != nil {
		return 0, fmt.Errorf("host cluster: patch the command of deployment %s: %w", name, err)
	}
	return patched.GetGeneration(), nil
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
