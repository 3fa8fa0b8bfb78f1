package karmada

import (
	"context"
	"fmt"
	"time"

	"github.com/flowdev/flow/tasks"
	"github.com/flowdev/flow/tasks/kube"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// The member objects karmadactl register makes, read with the dynamic client (flow
// links no typed Kubernetes client: it would cost every start-up its init time).
var (
	secretResource         = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
	serviceAccountResource = schema.GroupVersionResource{Version: "v1", Resource: "serviceaccounts"}
)

// agentServiceAccount is the ServiceAccount karmadactl v1.13 register creates for
// karmada-agent (register.KarmadaAgentServiceAccountName). With the kubeconfig
// Secret and the Deployment, it is what register's preflight refuses to find.
const agentServiceAccount = "karmada-agent-sa"

// agentAvailableWait bounds how long an existing karmada-agent may take to become
// available (it restarts when the task rewrote its server) before it counts as the
// remains of a half-done register.
var agentAvailableWait = 90 * time.Second

// agentState is what a member holds of an earlier register.
type agentState int

const (
	agentNone      agentState = iota // nothing: register from scratch
	agentLeftovers                   // the Secret or ServiceAccount without the Deployment
	agentDeployed                    // the Deployment
)

func (r *Registration) memberClient() (dynamic.Interface, string, error) {
	client, host, err := kube.DynamicClient(r.Kubeconfig, r.Context)
	if err != nil {
		return nil, "", fmt.Errorf("member cluster: %w", err)
	}
	return client, host, nil
}

// agentState reads which of register's objects the member has.
func (r *Registration) agentState(ctx context.Context, env *tasks.Env, client dynamic.Interface) (agentState, error) {
	ns := r.namespace()
	exists := func(gvr schema.GroupVersionResource, name string) (bool, error) {
		_, err := tasks.RetryTransient(ctx, env, kube.TransientFault, func() (*unstructured.Unstructured, error) {
			return client.Resource(gvr).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
		})
		switch {
		case apierrors.IsNotFound(err):
			return false, nil
		case err != nil:
			return false, err
		}
		return true, nil
	}
	deployed, err := exists(deploymentResource, agentDeployment)
	if err != nil || deployed {
		return agentDeployed, err
	}
	for gvr, name := range map[schema.GroupVersionResource]string{secretResource: agentKubeconfigSecret, serviceAccountResource: agentServiceAccount} {
		if found, err := exists(gvr, name); err != nil || found {
			return agentLeftovers, err
		}
	}
	return agentNone, nil
}

// waitAgentAvailable waits until karmada-agent has an available replica, for at
// most agentAvailableWait, and reports whether it has.
func (r *Registration) waitAgentAvailable(ctx context.Context, client dynamic.Interface) bool {
	ctx, cancel := context.WithTimeout(ctx, agentAvailableWait)
	defer cancel()
	for {
		d, err := client.Resource(deploymentResource).Namespace(r.namespace()).Get(ctx, agentDeployment, metav1.GetOptions{})
		if err == nil {
			if available, _, _ := unstructured.NestedInt64(d.Object, "status", "availableReplicas"); available > 0 {
				return true
			}
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(2 * time.Second):
		}
	}
}

// removeAgent deletes register's objects from the member, so that karmadactl
// register, whose preflight refuses any of them, can run again. Absent ones are fine.
func (r *Registration) removeAgent(ctx context.Context, client dynamic.Interface) error {
	ns := r.namespace()
	background := metav1.DeletePropagationBackground
	opts := metav1.DeleteOptions{PropagationPolicy: &background}
	for _, o := range []struct {
		what string
		gvr  schema.GroupVersionResource
		name string
	}{
		{"deployment", deploymentResource, agentDeployment},
		{"secret", secretResource, agentKubeconfigSecret},
		{"serviceaccount", serviceAccountResource, agentServiceAccount},
	} {
		if err := client.Resource(o.gvr).Namespace(ns).Delete(ctx, o.name, opts); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete %s %s in namespace %s: %w", o.what, o.name, ns, err)
		}
	}
	return nil
}

// fixServerDuringRegister points the agent's kubeconfig at agent_api_endpoint as
// soon as karmadactl register has written it, until done is closed: register waits
// for the agent to roll out, which it cannot while its server is one only this
// machine reaches. Objects not created yet are tried again every half second.
func (r *Registration) fixServerDuringRegister(ctx context.Context, env *tasks.Env, done <-chan struct{}) {
	polling := *env
	polling.TransientRetry = -1 // a missing object is tried again here
	for {
		if err := r.ensureAgentServer(ctx, &polling); err == nil {
			return
		}
		select {
		case <-done:
			return
		case <-ctx.Done():
			return
		case <-time.After(500 * time.Millisecond):
		}
	}
}
