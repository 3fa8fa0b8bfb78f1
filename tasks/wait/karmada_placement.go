package wait

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/zclconf/go-cty/cty"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/dynamic"

	"github.com/flowdev/flow/tasks"
	"github.com/flowdev/flow/tasks/kube"
)

// karmadaPlacementKind is ready when the Karmada ResourceBinding name in namespace has
// a scheduling result (spec.clusters) in which every cluster of placement_present
// holds the resource and none of placement_absent does. A cluster Karmada is still
// evicting the resource from (spec.gracefulEvictionTasks: its old replicas run until
// the new ones are healthy) still holds it, and blocks a reschedule onto it. The kubeconfig is the Karmada
// API server's. Unlike the binding's Scheduled condition, which stays True while the
// scheduler moves a workload, this sees a cluster leave the placement and come back.
var karmadaPlacementKind = kind{
	attrs:    withKubeConn("name", "namespace", "placement_present", "placement_absent"),
	required: []string{"name"},
	validate: validatePlacement,
	what:     placementWhat,
	newProbe: newPlacementProbe,
}

// placementWhat reads "ResourceBinding karmada-demo/nginx-deployment placed on member2
// and not on member1, member3".
func placementWhat(w *WaitReady) string {
	var want []string
	if len(w.PlacementPresent) > 0 {
		want = append(want, "placed on "+strings.Join(w.PlacementPresent, ", "))
	}
	if len(w.PlacementAbsent) > 0 {
		want = append(want, "not placed on "+strings.Join(w.PlacementAbsent, ", "))
	}
	return "ResourceBinding " + w.namespace() + "/" + w.Name + " " + strings.Join(want, " and ") + kubeWhere(w)
}

func validatePlacement(w *WaitReady) error {
	if err := validateDNSName("name", w.Name); err != nil {
		return err
	}
	if err := validateNamespace(w); err != nil {
		return err
	}
	if len(w.PlacementPresent) == 0 && len(w.PlacementAbsent) == 0 {
		return &tasks.AttrError{Attr: "placement_present", Err: errors.New("placement_present or placement_absent must name a cluster")}
	}
	for _, l := range []struct {
		attr  string
		names []string
	}{{"placement_present", w.PlacementPresent}, {"placement_absent", w.PlacementAbsent}} {
		for _, name := range l.names {
			if err := validateDNSName(l.attr, name); err != nil {
				return err
			}
		}
		if err := validateNoDuplicates(l.attr, l.names); err != nil {
			return err
		}
	}
	for _, name := range w.PlacementAbsent {
		if slices.Contains(w.PlacementPresent, name) {
			return &tasks.AttrError{Attr: "placement_absent", Err: fmt.Errorf("%q is in placement_present too", name)}
		}
	}
	return nil
}

type placementProbe struct {
	client          dynamic.Interface
	name, namespace string
	present, absent []string
	placement       placement // of the last binding read
}

func newPlacementProbe(w *WaitReady) (probe, error) {
	c, err := kubeDynamic(w)
	if err != nil {
		return nil, err
	}
	return &placementProbe{client: c, name: w.Name, namespace: w.namespace(),
		present: w.PlacementPresent, absent: w.PlacementAbsent}, nil
}

// check reads the binding. Its state is the placement ("member2=3 member3=3"), or "no
// binding" or "not scheduled yet" (no spec.clusters). Without Karmada's CRDs the read
// fails with "the server could not find the requested resource", which is not ready
// yet: they may be installed by then.
func (p *placementProbe) check(ctx context.Context) (bool, string, error) {
	b, err := getAs[resourceBinding](ctx, p.client.Resource(kube.BindingResource).Namespace(p.namespace), p.name)
	switch {
	case isObjectNotFound(err, p.name):
		return false, "no binding", nil
	case err != nil:
		return false, errorState(err), nil
	case len(b.Spec.Clusters) == 0:
		return false, "not scheduled yet", nil
	}
	p.placement = b.placement()
	return p.placement.satisfies(p.present, p.absent), p.placement.String(), nil
}

// isObjectNotFound tells a missing object from a missing resource (no CRD): both are
// 404 Not Found, but only the first names the object.
func isObjectNotFound(err error, name string) bool {
	var status apierrors.APIStatus
	if !apierrors.IsNotFound(err) || !errors.As(err, &status) {
		return false
	}
	d := status.Status().Details
	return d != nil && d.Name == name
}

// resourceBinding holds the fields of a work.karmada.io/v1alpha2 ResourceBinding the
// kind judges: the scheduler's result, one TargetCluster per member.
type resourceBinding struct {
	Spec struct {
		Replicas int32 `json:"replicas,omitempty"`
		Clusters []struct {
			Name     string `json:"name"`
			Replicas int32  `json:"replicas,omitempty"`
		} `json:"clusters,omitempty"`
		GracefulEvictionTasks []struct {
			FromCluster string `json:"fromCluster"`
		} `json:"gracefulEvictionTasks,omitempty"`
	} `json:"spec"`
}

// placement maps each cluster in a binding's spec.clusters to its replicas. A
// resource without replicas (spec.replicas unset, such as a ConfigMap propagated to
// every member) is held by every listed cluster, with 0 replicas.
type placement struct {
	replicas     map[string]int64
	withReplicas bool            // the resource has replicas: a listed cluster with 0 holds none
	evicting     map[string]bool // clusters in a graceful eviction task
}

func (b *resourceBinding) placement() placement {
	p := placement{replicas: make(map[string]int64, len(b.Spec.Clusters)), withReplicas: b.Spec.Replicas > 0}
	for _, c := range b.Spec.Clusters {
		p.replicas[c.Name] += int64(c.Replicas)
	}
	for _, e := range b.Spec.GracefulEvictionTasks {
		if p.evicting == nil {
			p.evicting = map[string]bool{}
		}
		p.evicting[e.FromCluster] = true
	}
	return p
}

// holds says whether cluster runs the resource: listed, with replicas if it has any,
// or still being evicted from.
func (p placement) holds(cluster string) bool {
	n, ok := p.replicas[cluster]
	return ok && (n > 0 || !p.withReplicas) || p.evicting[cluster]
}

// satisfies says whether every present cluster holds the resource in the scheduling
// result, and no absent one holds it or is still being evicted from.
func (p placement) satisfies(present, absent []string) bool {
	placed := func(c string) bool { n, ok := p.replicas[c]; return ok && (n > 0 || !p.withReplicas) }
	return !slices.ContainsFunc(present, func(c string) bool { return !placed(c) }) &&
		!slices.ContainsFunc(absent, p.holds)
}

// String reads "member2=3 member3=3", sorted by cluster name, with "(evicting NAME)"
// after it while Karmada still removes the resource from a cluster.
func (p placement) String() string {
	names := make([]string, 0, len(p.replicas))
	for name := range p.replicas {
		names = append(names, name)
	}
	slices.Sort(names)
	for i, name := range names {
		names[i] = name + "=" + strconv.FormatInt(p.replicas[name], 10)
	}
	evicting := make([]string, 0, len(p.evicting))
	for name := range p.evicting {
		evicting = append(evicting, name)
	}
	slices.Sort(evicting)
	for _, name := range evicting {
		names = append(names, "(evicting "+name+")")
	}
	return strings.Join(names, " ")
}

// value is the placement as a map(number), cluster to replicas.
func (p placement) value() cty.Value {
	if len(p.replicas) == 0 {
		return cty.MapValEmpty(cty.Number)
	}
	m := make(map[string]cty.Value, len(p.replicas))
	for name, n := range p.replicas {
		m[name] = cty.NumberIntVal(n)
	}
	return cty.MapVal(m)
}

func (p *placementProbe) outputs() tasks.Outputs {
	return tasks.Outputs{"placement": p.placement.value()}
}

var (
	_ probe     = (*placementProbe)(nil)
	_ outputter = (*placementProbe)(nil)
)
