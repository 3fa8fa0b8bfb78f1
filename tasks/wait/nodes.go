package wait

import (
	"cmp"
	"context"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"

	"github.com/flowdev/flow/tasks"
	"github.com/flowdev/flow/tasks/internal/output"
)

// nodesKind is ready when at least min_count Nodes exist and every one of them has
// condition Ready=True.
var nodesKind = kind{
	attrs:    withKubeConn("min_count"),
	validate: validateMinCount,
	what:     func(w *WaitReady) string { return "nodes" + kubeWhere(w) },
	newProbe: newNodesProbe,
}

type nodesProbe struct {
	client dynamic.Interface
	min    int
	names  []string // set by the check that found them ready
}

func newNodesProbe(w *WaitReady) (probe, error) {
	c, err := kubeDynamic(w)
	if err != nil {
		return nil, err
	}
	return &nodesProbe{client: c, min: w.minCount()}, nil
}

func (p *nodesProbe) check(ctx context.Context) (bool, string, error) {
	nodes, err := listAs[node](ctx, p.client.Resource(nodeResource), metav1.ListOptions{})
	if err != nil {
		return false, errorState(err), nil
	}
	slices.SortFunc(nodes, func(a, b node) int { return cmp.Compare(a.Name, b.Name) })
	var names, notReady []string
	for i := range nodes {
		names = append(names, nodes[i].Name)
		if why := nodeNotReady(&nodes[i]); why != "" {
			notReady = append(notReady, nodes[i].Name+": "+why)
		}
	}
	state := countState("nodes", len(nodes)-len(notReady), len(nodes), p.min, notReady)
	if len(notReady) > 0 || len(nodes) < p.min {
		return false, state, nil
	}
	p.names = names
	return true, state, nil
}

// nodeNotReady says why a node is not Ready, or "" when it is.
func nodeNotReady(n *node) string {
	for _, c := range n.Status.Conditions {
		if c.Type != "Ready" {
			continue
		}
		switch c.Status {
		case "True":
			return ""
		case "False":
			return "NotReady"
		default:
			return "Ready=" + string(c.Status)
		}
	}
	return "no Ready condition"
}

func (p *nodesProbe) outputs() tasks.Outputs {
	return tasks.Outputs{"nodes": output.StringList(p.names)}
}

var (
	_ probe     = (*nodesProbe)(nil)
	_ outputter = (*nodesProbe)(nil)
)
