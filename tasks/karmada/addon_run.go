package karmada

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/flowdev/flow/tasks"
	"github.com/flowdev/flow/tasks/kube"
	"github.com/zclconf/go-cty/cty"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"
)

// forwarderName is the sidecar container loopback_forwards adds.
const forwarderName = "loopback-forward"

// addonPodTimeout is karmadactl's --pod-timeout, in seconds: how long enable
// waits for the addon's pods. The task waits for the rollout itself afterwards.
const addonPodTimeout = "--pod-timeout=300"

// Run enables the addon unless its Deployment is already as wanted, adds the
// forwarding sidecar, and waits until the Deployment has rolled out.
func (a *Addon) Run(ctx context.Context, env *tasks.Env) (tasks.Outputs, error) {
	a = a.in(env)
	out := tasks.Outputs{"deployment": cty.StringVal(a.deployment()), "namespace": cty.StringVal(a.namespace())}
	client, _, err := kube.DynamicClient(a.Kubeconfig, a.Context)
	if err != nil {
		return nil, fmt.Errorf("enable %s: host cluster: %w", a.Addon, err)
	}
	deployments := client.Resource(deploymentResource).Namespace(a.namespace())
	obj, err := getDeployment(ctx, env, deployments, a.deployment())
	if err != nil {
		return nil, fmt.Errorf("enable %s: %w", a.Addon, err)
	}
	if obj != nil && a.has(obj) && rolloutProblem(obj, obj.GetGeneration()) == "" {
		fmt.Fprintf(env.Stdout, "addon %s already enabled (deployment %s)\n", a.Addon, a.deployment())
		return out, nil
	}
	if obj == nil || !a.hasImage(obj) {
		if err := a.enable(ctx, env); err != nil {
			return nil, err
		}
		// enable made or rewrote the Deployment: read what it left.
		if obj, err = getDeployment(ctx, env, deployments, a.deployment()); err != nil {
			return nil, fmt.Errorf("enable %s: %w", a.Addon, err)
		}
	}
	gen, err := a.ensureForwarder(ctx, env, deployments, obj)
	if err != nil {
		return nil, fmt.Errorf("enable %s: %w", a.Addon, err)
	}
	if err := waitRolledOut(ctx, env, deployments, a.deployment(), gen); err != nil {
		return nil, fmt.Errorf("enable %s: %w", a.Addon, err)
	}
	fmt.Fprintf(env.Stdout, "addon %s enabled (deployment %s rolled out)\n", a.Addon, a.deployment())
	return out, nil
}

// enable runs karmadactl addons enable.
func (a *Addon) enable(ctx context.Context, env *tasks.Env) error {
	bin := newBinary(a.Karmadactl, a.KarmadactlVersion)
	if err := bin.checkVersion(ctx, env); err != nil {
		return err
	}
	args := append([]string{"addons", "enable", a.Addon, addonPodTimeout}, addonFlags.args(a)...)
	args = append(args, addonEnableFlags.args(a)...)
	if a.Image != "" {
		args = append(args, "--"+addonImageFlags[a.Addon]+"="+a.Image)
	}
	if a.Addon == estimatorAddon {
		// karmadactl stores the member's kubeconfig with --member-context as its
		// current context, an empty one when the flag is left out.
		memberContext, err := a.memberContext()
		if err != nil {
			return fmt.Errorf("enable %s: %w", a.Addon, err)
		}
		args = append(args, "--member-context="+memberContext)
	}
	args = append(args, a.ExtraArgs...)
	if _, _, err := bin.run(ctx, env, args, env.Stdout, env.Stderr); err != nil {
		return fmt.Errorf("karmadactl addons enable %s: %w", a.Addon, err)
	}
	return nil
}

// memberContext is member_context, or member_kubeconfig's current context.
func (a *Addon) memberContext() (string, error) {
	if a.MemberContext != "" {
		return a.MemberContext, nil
	}
	config, err := clientcmd.LoadFromFile(a.MemberKubeconfig)
	if err != nil {
		return "", fmt.Errorf("member kubeconfig: %w", err)
	}
	if config.CurrentContext == "" {
		return "", fmt.Errorf("member kubeconfig %s has no current context: set member_context", a.MemberKubeconfig)
	}
	return config.CurrentContext, nil
}

// getDeployment returns Deployment name, or nil when there is none.
func getDeployment(ctx context.Context, env *tasks.Env, deployments dynamic.ResourceInterface, name string) (*unstructured.Unstructured, error) {
	obj, err := tasks.RetryTransient(ctx, env, kube.TransientFault, func() (*unstructured.Unstructured, error) {
		return deployments.Get(ctx, name, metav1.GetOptions{})
	})
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("host cluster: get deployment %s: %w", name, err)
	}
	return obj, nil
}

// has reports whether Deployment obj runs the wanted image and sidecar.
func (a *Addon) has(obj *unstructured.Unstructured) bool {
	if !a.hasImage(obj) {
		return false
	}
	have := sidecar(obj)
	if len(a.LoopbackForwards) == 0 {
		return have == nil
	}
	want := a.forwarder()
	if have == nil || have["image"] != want["image"] {
		return false
	}
	command, _, _ := unstructured.NestedStringSlice(have, "command")
	return slices.Equal(command, want["command"].([]string))
}

// hasImage reports whether the addon's container runs image, or any image when
// none is set.
func (a *Addon) hasImage(obj *unstructured.Unstructured) bool {
	containers, _, _ := unstructured.NestedSlice(obj.Object, "spec", "template", "spec", "containers")
	if len(containers) == 0 {
		return false
	}
	c, _ := containers[0].(map[string]any)
	return a.Image == "" || c["image"] == a.Image
}

// sidecar is Deployment obj's forwarding container, or nil.
func sidecar(obj *unstructured.Unstructured) map[string]any {
	containers, _, _ := unstructured.NestedSlice(obj.Object, "spec", "template", "spec", "containers")
	for _, c := range containers {
		if m, _ := c.(map[string]any); m != nil && m["name"] == forwarderName {
			return m
		}
	}
	return nil
}

// forwarder is the sidecar container of loopback_forwards: one socat per port,
// listening on the pod's loopback only; when one exits, the container does, and
// the kubelet restarts it.
func (a *Addon) forwarder() map[string]any {
	var script strings.Builder
	script.WriteString("set -u\n")
	for _, listen := range slices.Sorted(maps.Keys(a.LoopbackForwards)) {
		addr, port := forwardListen(listen)
		fmt.Fprintf(&script, "socat TCP-LISTEN:%s,bind=%s,fork,reuseaddr TCP:%s &\n", port, addr, a.LoopbackForwards[listen])
	}
	script.WriteString("wait -n\nexit 1\n")
	return map[string]any{
		"name":    forwarderName,
		"image":   a.ForwarderImage,
		"command": []string{"bash", "-c", script.String()},
	}
}

// ensureForwarder adds, replaces or removes the sidecar so that Deployment obj
// has the one loopback_forwards wants, with one JSON patch that first tests the
// containers it read. It returns the generation to wait for.
func (a *Addon) ensureForwarder(ctx context.Context, env *tasks.Env, deployments dynamic.ResourceInterface, obj *unstructured.Unstructured) (int64, error) {
	switch {
	case obj == nil:
		return 0, fmt.Errorf("host cluster: karmadactl made no deployment %s", a.deployment())
	case a.has(obj):
		return obj.GetGeneration(), nil
	}
	containers, _, _ := unstructured.NestedSlice(obj.Object, "spec", "template", "spec", "containers")
	next := slices.DeleteFunc(slices.Clone(containers), func(c any) bool {
		m, _ := c.(map[string]any)
		return m["name"] == forwarderName
	})
	if len(a.LoopbackForwards) > 0 {
		next = append(next, a.forwarder())
	}
	const path = "/spec/template/spec/containers"
	patch, err := json.Marshal([]map[string]any{
		{"op": "test", "path": path, "value": containers},
		{"op": "replace", "path": path, "value": next},
	})
	if err != nil {
		return 0, err
	}
	patched, err := deployments.Patch(ctx, a.deployment(), types.JSONPatchType, patch, metav1.PatchOptions{FieldManager: "flow"})
	if err != nil {
		return 0, fmt.Errorf("host cluster: patch deployment %s: %w", a.deployment(), err)
	}
	if len(a.LoopbackForwards) > 0 {
		fmt.Fprintf(env.Stdout, "%s: loopback forwards %s set; waiting for the rollout\n", a.deployment(), a.forwardList())
	}
	return patched.GetGeneration(), nil
}

func (a *Addon) forwardList() string {
	var parts []string
	for _, port := range slices.Sorted(maps.Keys(a.LoopbackForwards)) {
		parts = append(parts, port+" => "+a.LoopbackForwards[port])
	}
	return strings.Join(parts, ", ")
}

// Destroy disables the addon with karmadactl addons disable --force, which
// deletes what enable made and ignores what is already gone.
func (a *Addon) Destroy(ctx context.Context, env *tasks.Env, _ tasks.Outputs) error {
	a = a.in(env)
	bin := newBinary(a.Karmadactl, a.KarmadactlVersion)
	if err := bin.checkVersion(ctx, env); err != nil {
		return err
	}
	args := append([]string{"addons", "disable", a.Addon, "--force"}, addonFlags.args(a)...)
	if _, _, err := bin.run(ctx, env, args, env.Stdout, env.Stderr); err != nil {
		return fmt.Errorf("karmadactl addons disable %s: %w", a.Addon, err)
	}
	return nil
}

var _ tasks.Destroyer = (*Addon)(nil)
