package karmada

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"time"

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

// defaultClusterNamespace is karmadactl's default --cluster-namespace, in Karmada
// and on the member.
const defaultClusterNamespace = "karmada-cluster"

// gonePoll is how often the task looks whether an object it deleted is gone.
var gonePoll = 500 * time.Millisecond

// member is what the task knows of the member cluster: the UID of its
// kube-system namespace, which karmadactl join records as the Cluster's spec.id,
// and the endpoint the Cluster should have.
type member struct {
	id, endpoint string
	client       dynamic.Interface
}

// Run joins the member unless Karmada already has its Cluster object for this
// member; a Cluster of an earlier member of that name is replaced, and a wrong
// spec.apiEndpoint is patched.
func (j *Join) Run(ctx context.Context, env *tasks.Env) (tasks.Outputs, error) {
	j = j.in(env)
	out := tasks.Outputs{"cluster": cty.StringVal(j.Cluster)}
	bin := newBinary(j.Karmadactl, j.KarmadactlVersion)
	if err := bin.checkVersion(ctx, env); err != nil {
		return nil, err
	}
	cluster, err := getCluster(ctx, env, j.Kubeconfig, j.Context, j.Cluster)
	if err != nil {
		return nil, fmt.Errorf("join %q: %w", j.Cluster, err)
	}
	m, err := j.member(ctx, env)
	if err != nil {
		return nil, fmt.Errorf("join %q: %w", j.Cluster, err)
	}
	if cluster != nil {
		id := clusterID(cluster)
		if id == m.id {
			if err := j.ensureEndpoint(ctx, env, cluster, m, true); err != nil {
				return nil, err
			}
			return out, nil
		}
		fmt.Fprintf(env.Stdout, "cluster %s is stale (id %s, the member's is now %s); unjoining and joining again\n", j.Cluster, orNone(id), m.id)
		if err := j.removeStale(ctx, env, bin, m); err != nil {
			return nil, fmt.Errorf("join %q: %w", j.Cluster, err)
		}
	}
	cluster, err = j.join(ctx, env, bin, m)
	if err != nil {
		return nil, err
	}
	if j.APIEndpoint == "" {
		return out, nil
	}
	if err := j.ensureEndpoint(ctx, env, cluster, m, false); err != nil {
		return nil, err
	}
	return out, nil
}

// join runs karmadactl join and returns the Cluster it created. A join left
// running by a killed run may have created the Cluster meanwhile; then ours is
// refused, and the member is joined all the same.
func (j *Join) join(ctx context.Context, env *tasks.Env, bin binary, m member) (*unstructured.Unstructured, error) {
	args := append(append([]string{"join", j.Cluster}, joinFlags.args(j)...), j.ExtraArgs...)
	_, _, runErr := bin.run(ctx, env, args, env.Stdout, env.Stderr)
	if runErr != nil && ctx.Err() != nil {
		return nil, fmt.Errorf("karmadactl join %q: %w", j.Cluster, runErr)
	}
	cluster, err := getCluster(ctx, env, j.Kubeconfig, j.Context, j.Cluster)
	switch {
	case runErr == nil && err != nil:
		return nil, fmt.Errorf("join %q: after karmadactl join: %w", j.Cluster, err)
	case runErr == nil && cluster == nil:
		return nil, fmt.Errorf("join %q: karmadactl join succeeded but Karmada has no cluster %s", j.Cluster, j.Cluster)
	case runErr == nil:
		return cluster, nil
	case err == nil && cluster != nil && clusterID(cluster) == m.id:
		fmt.Fprintf(env.Stdout, "cluster %s was joined by an earlier attempt\n", j.Cluster)
		return cluster, nil
	}
	return nil, fmt.Errorf("karmadactl join %q: %w", j.Cluster, runErr)
}

// ensureEndpoint patches the Cluster's spec.apiEndpoint to the member's wanted
// endpoint unless it has it; present says whether to report a Cluster that needs
// nothing as already present.
func (j *Join) ensureEndpoint(ctx context.Context, env *tasks.Env, cluster *unstructured.Unstructured, m member, present bool) error {
	have, _, _ := unstructured.NestedString(cluster.Object, "spec", "apiEndpoint")
	if have == m.endpoint {
		if present {
			fmt.Fprintf(env.Stdout, "cluster %s already present (api endpoint %s)\n", j.Cluster, have)
		}
		return nil
	}
	client, host, err := karmadaClient(j.Kubeconfig, j.Context)
	if err != nil {
		return fmt.Errorf("join %q: %w", j.Cluster, err)
	}
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{"apiEndpoint": m.endpoint}})
	if err != nil {
		return fmt.Errorf("join %q: %w", j.Cluster, err)
	}
	if _, err := client.Resource(clusters).Patch(ctx, j.Cluster, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: "flow"}); err != nil {
		return fmt.Errorf("join %q: karmada API server %s: patch the cluster's api endpoint: %w", j.Cluster, host, err)
	}
	fmt.Fprintf(env.Stdout, "cluster %s: api endpoint %s → %s\n", j.Cluster, orNone(have), m.endpoint)
	return nil
}

// removeStale removes the Cluster of an earlier member with karmadactl unjoin or,
// when unjoin fails, by deleting it, and waits until Karmada's Cluster is gone and
// the member's cluster namespace, which unjoin deletes, is not being deleted:
// karmadactl join can create neither a Cluster that exists nor its service
// account in a namespace that is being deleted.
func (j *Join) removeStale(ctx context.Context, env *tasks.Env, bin binary, m member) error {
	client, host, err := karmadaClient(j.Kubeconfig, j.Context)
	if err != nil {
		return err
	}
	args, err := j.unjoinArgs()
	if err != nil {
		return err
	}
	if _, _, err := bin.run(ctx, env, args, env.Stdout, env.Stderr); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("karmadactl unjoin: %w", err)
		}
		fmt.Fprintf(env.Stdout, "karmadactl unjoin failed (%v); deleting cluster %s\n", err, j.Cluster)
		err := client.Resource(clusters).Delete(ctx, j.Cluster, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("karmada API server %s: delete cluster: %w", host, err)
		}
	}
	if err := waitDeleted(ctx, client.Resource(clusters), j.Cluster, true); err != nil {
		return fmt.Errorf("karmada API server %s: %w", host, err)
	}
	if err := waitDeleted(ctx, m.client.Resource(namespaceResource), j.clusterNamespace(), false); err != nil {
		return fmt.Errorf("member cluster: %w", err)
	}
	return nil
}

// unjoinArgs is the karmadactl unjoin command line for the Cluster. unjoin takes
// the cluster's name for an unset --cluster-context, where join takes the
// kubeconfig's current context, so an unset cluster_context becomes the
// current context of cluster_kubeconfig.
func (j *Join) unjoinArgs() ([]string, error) {
	u := *j
	if u.ClusterContext == "" && u.ClusterKubeconfig != "" {
		rules := &clientcmd.ClientConfigLoadingRules{ExplicitPath: u.ClusterKubeconfig}
		raw, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).RawConfig()
		if err != nil {
			return nil, fmt.Errorf("member cluster: current context of %s: %w", u.ClusterKubeconfig, err)
		}
		u.ClusterContext = raw.CurrentContext
	}
	return append([]string{"unjoin", j.Cluster}, unjoinFlags.args(&u)...), nil
}

// waitDeleted polls, bounded by ctx, until the object name of resource is not
// found or, unless gone is set, exists without being deleted.
func waitDeleted(ctx context.Context, resource dynamic.ResourceInterface, name string, gone bool) error {
	for {
		obj, err := resource.Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return nil
		case err == nil && !gone && obj.GetDeletionTimestamp() == nil:
			return nil
		case err != nil && kube.TransientFault(err) == "":
			return fmt.Errorf("wait until %s is deleted: %w", name, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait until %s is deleted: %w", name, context.Cause(ctx))
		case <-time.After(gonePoll):
		}
	}
}

// member reads the member's identity (the UID of its kube-system namespace) and
// the endpoint its Cluster should have: api_endpoint or cluster_kubeconfig's
// server.
func (j *Join) member(ctx context.Context, env *tasks.Env) (member, error) {
	client, host, err := kube.DynamicClient(j.ClusterKubeconfig, j.ClusterContext)
	if err != nil {
		return member{}, fmt.Errorf("member cluster: %w", err)
	}
	ns, err := tasks.RetryTransient(ctx, env, kube.TransientFault, func() (*unstructured.Unstructured, error) {
		return client.Resource(namespaceResource).Get(ctx, metav1.NamespaceSystem, metav1.GetOptions{})
	})
	if err != nil {
		return member{}, fmt.Errorf("member cluster %s: get namespace kube-system: %w", host, err)
	}
	m := member{id: string(ns.GetUID()), endpoint: j.APIEndpoint, client: client}
	if m.endpoint == "" {
		m.endpoint = host
	}
	return m, nil
}

func (j *Join) clusterNamespace() string {
	if j.ClusterNamespace == "" {
		return defaultClusterNamespace
	}
	return j.ClusterNamespace
}

// karmadaClient is a dynamic client for the Karmada API server, and its address.
func karmadaClient(kubeconfig, kubeContext string) (*dynamic.DynamicClient, string, error) {
	client, host, err := kube.DynamicClient(kubeconfig, kubeContext)
	if err != nil {
		return nil, "", fmt.Errorf("karmada API server: %w", err)
	}
	return client, host, nil
}

// clusterID is a Cluster's spec.id.
func clusterID(cluster *unstructured.Unstructured) string {
	id, _, _ := unstructured.NestedString(cluster.Object, "spec", "id")
	return id
}

// orNone words an empty value.
func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// validateHTTPSURL checks an optional https:// URL with a host.
func validateHTTPSURL(s string) error {
	if s == "" {
		return nil
	}
	u, err := url.Parse(s)
	switch {
	case err != nil || !strings.HasPrefix(s, "https://"):
		return fmt.Errorf("%q is not an https:// URL", s)
	case u.Host == "" || u.Hostname() == "":
		return fmt.Errorf("%q has no host", s)
	}
	return nil
}
