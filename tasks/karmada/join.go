package karmada

import (
	"context"
	"fmt"
	"strings"

	"github.com/flowdev/flow/tasks"
	"github.com/flowdev/flow/tasks/kube"
	"github.com/zclconf/go-cty/cty"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
)

// clusterNameMax is Karmada's limit on cluster names.
const clusterNameMax = 48

// clusters is Karmada's Cluster resource, cluster-scoped.
var clusters = schema.GroupVersionResource{Group: "cluster.karmada.io", Version: "v1alpha1", Resource: "clusters"}

// Join registers a member cluster with Karmada in Push mode with `karmadactl join`.
// It is the hcl config struct of the karmadactl_join task type.
type Join struct {
	Karmadactl        string   `hcl:"karmadactl,optional" doc:"Path of the karmadactl binary; default \"karmadactl\", looked up in PATH."`
	KarmadactlVersion string   `hcl:"karmadactl_version,optional" doc:"Version the binary must report; default \"v1.13.0\", the version flow's flags were checked against."`
	ExtraArgs         []string `hcl:"extra_args,optional" doc:"Further karmadactl join arguments; they must not set a flag an attribute maps."`

	Cluster           string   `hcl:"cluster" doc:"Name of the member in Karmada, the Cluster object's name."`
	Kubeconfig        string   `hcl:"kubeconfig,optional" doc:"Path of the Karmada API server's kubeconfig (--kubeconfig), e.g. karmadactl_init's kubeconfig output; default $KUBECONFIG, then ~/.kube/config."`
	Context           string   `hcl:"context,optional" doc:"Context in the Karmada kubeconfig (--karmada-context); default its current-context."`
	ClusterKubeconfig string   `hcl:"cluster_kubeconfig,optional" doc:"Path of the member cluster's kubeconfig (--cluster-kubeconfig)."`
	ClusterContext    string   `hcl:"cluster_context,optional" doc:"Context in the member's kubeconfig (--cluster-context); default its current-context."`
	ClusterNamespace  string   `hcl:"cluster_namespace,optional" doc:"Namespace in Karmada for the member's secrets (--cluster-namespace); default karmada-cluster."`
	ClusterProvider   string   `hcl:"cluster_provider,optional" doc:"Provider of the member, for scheduling (--cluster-provider)."`
	ClusterRegion     string   `hcl:"cluster_region,optional" doc:"Region of the member, for scheduling (--cluster-region)."`
	ClusterZones      []string `hcl:"cluster_zones,optional" doc:"Zones of the member, for scheduling (--cluster-zones, joined with commas)."`
	KarmadaAs         string   `hcl:"karmada_as,optional" doc:"User to impersonate in Karmada (--karmada-as)."`
	KarmadaAsGroups   []string `hcl:"karmada_as_groups,optional" doc:"Groups to impersonate in Karmada (--karmada-as-group, once per group)."`
	KarmadaAsUID      string   `hcl:"karmada_as_uid,optional" doc:"UID to impersonate in Karmada (--karmada-as-uid)."`

	APIEndpoint string `hcl:"api_endpoint,optional" doc:"The member's API server as Karmada's controllers reach it (the Cluster's spec.apiEndpoint), when it differs from cluster_kubeconfig's server, as behind NAT or port forwards; the task sets it after karmadactl join. Default: the server of cluster_kubeconfig."`
}

// joinFlags is every flag karmadactl_join emits besides `join CLUSTER`.
var joinFlags = flagTable{
	{"kubeconfig", "kubeconfig", kindString},
	{"context", "karmada-context", kindString},
	{"cluster_kubeconfig", "cluster-kubeconfig", kindString},
	{"cluster_context", "cluster-context", kindString},
	{"cluster_namespace", "cluster-namespace", kindString},
	{"cluster_provider", "cluster-provider", kindString},
	{"cluster_region", "cluster-region", kindString},
	{"cluster_zones", "cluster-zones", kindList},
	{"karmada_as", "karmada-as", kindString},
	{"karmada_as_groups", "karmada-as-group", kindRepeated},
	{"karmada_as_uid", "karmada-as-uid", kindString},
}

func joinType() tasks.Type {
	return tasks.Type{
		Name:    "karmadactl_join",
		Summary: "Join a member cluster to Karmada in Push mode with karmadactl join",
		Doc: `Runs karmadactl join CLUSTER against the Karmada API server (kubeconfig, context)
and the member (cluster_kubeconfig, cluster_context). Each attribute maps to one
karmadactl join flag; extra_args carries anything else.

When Karmada already has a Cluster object named cluster, the task compares it with
the member: karmadactl join records the UID of the member's kube-system namespace as
the Cluster's spec.id. If the member's UID differs (a rebuilt member under the same
name), the Cluster is stale: the task says so, runs karmadactl unjoin (or deletes the
Cluster itself when unjoin fails) and joins again. If only spec.apiEndpoint differs
from api_endpoint (default cluster_kubeconfig's server), it patches spec.apiEndpoint.
Otherwise it changes nothing and says "cluster NAME already present". Other fields
(region, zones, provider) are not compared.`,
		New: func() tasks.Task { return &Join{} },
		Outputs: []tasks.Output{
			{Name: "cluster", Type: cty.String, Doc: "The member's name in Karmada.", Clean: true},
		},
		Undo: "flow destroy unjoins the member cluster from the Karmada control plane (karmadactl unjoin, waiting for the Cluster to go for what is left of the task's timeout, or 5 minutes); a cluster that is not joined is already undone.",
		Example: `task "karmadactl_join" "member1" {
  cluster            = "member1"
  kubeconfig         = karmadactl_init.karmada.kubeconfig
  cluster_kubeconfig = "/etc/flow/member1.kubeconfig"
  cluster_region     = "lab"
  cluster_zones      = ["lab-a"]
}`,
	}
}

// Validate checks the cluster name as Karmada does, and extra_args.
func (j *Join) Validate() error {
	if err := validateVersion(j.KarmadactlVersion); err != nil {
		return err
	}
	if err := validateClusterName("cluster", j.Cluster); err != nil {
		return err
	}
	if err := validateHTTPSURL(j.APIEndpoint); err != nil {
		return &tasks.AttrError{Attr: "api_endpoint", Err: err}
	}
	return joinFlags.validate(j, j.ExtraArgs)
}

// validateClusterName checks a member name as karmadactl does before it acts.
func validateClusterName(attr, name string) error {
	if len(name) > clusterNameMax {
		return attrErr(attr, "%q is longer than %d characters", name, clusterNameMax)
	}
	if msgs := validation.IsDNS1123Label(name); len(msgs) > 0 {
		return attrErr(attr, "%q: %s", name, strings.Join(msgs, "; "))
	}
	return nil
}

// getCluster returns Karmada's Cluster object name, or nil when there is none. A
// Karmada API server that is restarting is asked again (kube.TransientFault).
func getCluster(ctx context.Context, env *tasks.Env, kubeconfig, kubeContext, name string) (*unstructured.Unstructured, error) {
	client, host, err := karmadaClient(kubeconfig, kubeContext)
	if err != nil {
		return nil, err
	}
	obj, err := tasks.RetryTransient(ctx, env, kube.TransientFault, func() (*unstructured.Unstructured, error) {
		return client.Resource(clusters).Get(ctx, name, metav1.GetOptions{})
	})
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("karmada API server %s: get cluster: %w", host, err)
	}
	return obj, nil
}
