package karmada

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/flowdev/flow/tasks"
	"github.com/flowdev/flow/tasks/kube"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"
)

const (
	// agentKubeconfigSecret is the Secret karmadactl v1.13 register writes the
	// agent's kubeconfig into, in the agent's namespace, under a key of the same
	// name (register.KarmadaKubeconfigName).
	agentKubeconfigSecret = "karmada-kubeconfig"
	// agentServerAnnotation on karmada-agent's pod template records the server
	// the task pointed the agent at; changing it restarts the agent.
	agentServerAnnotation = "flow.dev/karmada-kubeconfig-server"
)

// ensureAgent makes karmada-agent as agent_api_endpoint, cluster_api_endpoint and
// agent_args say, each unless unset.
func (r *Registration) ensureAgent(ctx context.Context, env *tasks.Env) error {
	if err := r.ensureAgentServer(ctx, env); err != nil {
		return err
	}
	return r.ensureAgentArgs(ctx, env)
}

// agentArgs are the arguments the task puts into karmada-agent's command:
// agent_args, and --cluster-api-endpoint from cluster_api_endpoint, which the
// agent writes into its Cluster's spec.apiEndpoint when it starts.
func (r *Registration) agentArgs() []string {
	args := slices.Clone(r.AgentArgs)
	if r.ClusterAPIEndpoint != "" {
		args = append(args, "--cluster-api-endpoint="+r.ClusterAPIEndpoint)
	}
	return args
}

// ensureAgentArgs puts agentArgs into karmada-agent's command unless they are
// there; the change restarts the agent.
func (r *Registration) ensureAgentArgs(ctx context.Context, env *tasks.Env) error {
	args := r.agentArgs()
	if len(args) == 0 {
		return nil
	}
	client, host, err := r.memberClient()
	if err != nil {
		return fmt.Errorf("karmada-agent arguments: %w", err)
	}
	deployments := client.Resource(deploymentResource).Namespace(r.namespace())
	gen, done, err := patchTune(ctx, env, deployments, agentDeployment, tune{args: args})
	if err != nil {
		return fmt.Errorf("karmada-agent arguments: member cluster %s: %w", host, err)
	}
	if gen != 0 {
		fmt.Fprintf(env.Stdout, "karmada-agent: %s\n", done)
	}
	return nil
}

// ensureAgentServer points karmada-agent at https://agent_api_endpoint, unless
// agent_api_endpoint is unset: it sets every cluster's server in the agent's
// kubeconfig Secret and, when that changed or the agent's pod template does not
// carry the server yet, annotates the pod template so the agent restarts with it.
// The kubeconfig holds the agent's client key: it is never printed, and errors
// do not quote it.
func (r *Registration) ensureAgentServer(ctx context.Context, env *tasks.Env) error {
	if r.AgentAPIEndpoint == "" {
		return nil
	}
	server := "https://" + r.AgentAPIEndpoint
	client, host, err := r.memberClient()
	if err != nil {
		return fmt.Errorf("karmada-agent server: %w", err)
	}
	changed, err := r.setSecretServer(ctx, env, client, server)
	if err != nil {
		return fmt.Errorf("karmada-agent server: member cluster %s: %w", host, err)
	}
	restarted, err := r.restartAgent(ctx, env, client, server, changed)
	if err != nil {
		return fmt.Errorf("karmada-agent server: member cluster %s: %w", host, err)
	}
	if changed || restarted {
		fmt.Fprintf(env.Stdout, "karmada-agent: karmada API server → %s\n", server)
	}
	return nil
}

// setSecretServer sets server in every cluster of the agent's kubeconfig Secret
// and reports whether it changed the Secret. The update carries the
// resourceVersion read, so a concurrent change fails instead of being lost.
func (r *Registration) setSecretServer(ctx context.Context, env *tasks.Env, client dynamic.Interface, server string) (bool, error) {
	secrets := client.Resource(secretResource).Namespace(r.namespace())
	secret, err := tasks.RetryTransient(ctx, env, kube.TransientFault, func() (*unstructured.Unstructured, error) {
		return secrets.Get(ctx, agentKubeconfigSecret, metav1.GetOptions{})
	})
	if err != nil {
		return false, fmt.Errorf("get secret %s/%s: %w", r.namespace(), agentKubeconfigSecret, err)
	}
	where := fmt.Sprintf("secret %s/%s key %s", r.namespace(), agentKubeconfigSecret, agentKubeconfigSecret)
	encoded, ok, _ := unstructured.NestedString(secret.Object, "data", agentKubeconfigSecret)
	if !ok {
		return false, fmt.Errorf("%s: absent", where)
	}
	data, err := base64.StdEncoding.DecodeString(encoded)
	if err != nil {
		return false, fmt.Errorf("%s: not base64", where)
	}
	kc, err := clientcmd.Load(data)
	if err != nil {
		// clientcmd's errors may quote the document; name the place only.
		return false, fmt.Errorf("%s: not a kubeconfig", where)
	}
	if len(kc.Clusters) == 0 {
		return false, fmt.Errorf("%s: the kubeconfig has no cluster", where)
	}
	changed := false
	for _, c := range kc.Clusters {
		if c.Server != server {
			c.Server, changed = server, true
		}
	}
	if !changed {
		return false, nil
	}
	out, err := clientcmd.Write(*kc)
	if err != nil {
		return false, fmt.Errorf("%s: encode the kubeconfig", where)
	}
	if err := unstructured.SetNestedField(secret.Object, base64.StdEncoding.EncodeToString(out), "data", agentKubeconfigSecret); err != nil {
		return false, fmt.Errorf("%s: %w", where, err)
	}
	if _, err := secrets.Update(ctx, secret, metav1.UpdateOptions{FieldManager: "flow"}); err != nil {
		return false, fmt.Errorf("update %s: %w", where, err)
	}
	return true, nil
}

// restartAgent sets the server annotation on karmada-agent's pod template, which
// makes the Deployment replace its pods, when the Secret changed or the
// annotation differs; it reports whether it did. A changed Secret under an
// annotation that already names server restarts the agent as kubectl rollout
// restart does (kubectl.kubernetes.io/restartedAt).
func (r *Registration) restartAgent(ctx context.Context, env *tasks.Env, client dynamic.Interface, server string, changed bool) (bool, error) {
	deployments := client.Resource(deploymentResource).Namespace(r.namespace())
	agent, err := tasks.RetryTransient(ctx, env, kube.TransientFault, func() (*unstructured.Unstructured, error) {
		return deployments.Get(ctx, agentDeployment, metav1.GetOptions{})
	})
	if err != nil {
		return false, fmt.Errorf("get deployment %s/%s: %w", r.namespace(), agentDeployment, err)
	}
	have, _, _ := unstructured.NestedString(agent.Object, "spec", "template", "metadata", "annotations", agentServerAnnotation)
	if !changed && have == server {
		return false, nil
	}
	annotations := map[string]string{agentServerAnnotation: server}
	if have == server {
		annotations["kubectl.kubernetes.io/restartedAt"] = time.Now().UTC().Format(time.RFC3339)
	}
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{"template": map[string]any{
		"metadata": map[string]any{"annotations": annotations},
	}}})
	if err != nil {
		return false, err
	}
	if _, err := deployments.Patch(ctx, agentDeployment, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: "flow"}); err != nil {
		return false, fmt.Errorf("restart deployment %s/%s: %w", r.namespace(), agentDeployment, err)
	}
	return true, nil
}
