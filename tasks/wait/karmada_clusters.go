package wait

import (
	"context"
	"errors"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/flowdev/flow/tasks"
	"github.com/flowdev/flow/tasks/internal/output"
)

// karmadaClustersKind is ready when every Karmada Cluster named in clusters exists
// and has condition Ready=True. The kubeconfig is the Karmada API server's.
var karmadaClustersKind = kind{
	attrs:    withKubeConn("clusters"),
	required: []string{"clusters"},
	validate: validateClusters,
	what: func(w *WaitReady) string {
		return "Karmada clusters " + strings.Join(w.Clusters, ", ") + kubeWhere(w)
	},
	newProbe: newKarmadaClustersProbe,
}

// clusterResource is Karmada's cluster-scoped Cluster resource.
var clusterResource = schema.GroupVersionResource{Group: "cluster.karmada.io", Version: "v1alpha1", Resource: "clusters"}

func validateClusters(w *WaitReady) error {
	if len(w.Clusters) == 0 {
		return &tasks.AttrError{Attr: "clusters", Err: errors.New("must list at least one name")}
	}
	for _, name := range w.Clusters {
		if err := validateDNSName("clusters", name); err != nil {
			return err
		}
	}
	return validateNoDuplicates("clusters", w.Clusters)
}

type karmadaClustersProbe struct {
	client dynamic.Interface
	names  []string
}

func newKarmadaClustersProbe(w *WaitReady) (probe, error) {
	c, err := kubeDynamic(w)
	if err != nil {
		return nil, err
	}
	return &karmadaClustersProbe{client: c, names: w.Clusters}, nil
}

// check lists all clusters at once: one request however many are named. Without
// Karmada's CRDs the list fails with "the server could not find the requested
// resource", a state like any other: they may be installed yet.
func (p *karmadaClustersProbe) check(ctx context.Context) (bool, string, error) {
	list, err := p.client.Resource(clusterResource).List(ctx, metav1.ListOptions{})
	if err != nil {
		return false, errorState(err), nil
	}
	byName := make(map[string]*unstructured.Unstructured, len(list.Items))
	for i := range list.Items {
		byName[list.Items[i].GetName()] = &list.Items[i]
	}
	var notReady []string
	for _, name := range p.names {
		if why := clusterNotReady(byName[name]); why != "" {
			notReady = append(notReady, name+" "+why)
		}
	}
	if len(notReady) > 0 {
		return false, strings.Join(notReady, "; "), nil
	}
	return true, fmt.Sprintf("%d clusters Ready", len(p.names)), nil
}

// clusterNotReady says why a cluster (nil: missing) is not Ready, or "" when it is:
// "Ready=False (cluster is not reachable)".
func clusterNotReady(c *unstructured.Unstructured) string {
	if c == nil {
		return "not found"
	}
	cond, ok := findCondition(c, "Ready")
	switch {
	case !ok:
		return "has no Ready condition"
	case cond.status == "True":
		return ""
	case cond.message != "":
		return fmt.Sprintf("Ready=%s (%s)", cond.status, cond.message)
	case cond.reason != "":
		return fmt.Sprintf("Ready=%s (%s)", cond.status, cond.reason)
	}
	return "Ready=" + cond.status
}

func (p *karmadaClustersProbe) outputs() tasks.Outputs {
	return tasks.Outputs{"clusters": output.StringList(p.names)}
}

var (
	_ probe     = (*karmadaClustersProbe)(nil)
	_ outputter = (*karmadaClustersProbe)(nil)
)
