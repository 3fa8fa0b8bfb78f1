package wait

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/flowdev/flow/tasks"
	"github.com/flowdev/flow/tasks/internal/progress"
)

// probe checks readiness once. A check that may pass later (connection refused, wrong
// status, ctx expired) returns ready=false and a short state such as "status 503";
// err is only for what no later check can fix, and ends the wait.
type probe interface {
	check(ctx context.Context) (ready bool, state string, err error)
}

// outputter is a probe that publishes outputs besides elapsed, read after the check
// that found the thing ready.
type outputter interface {
	outputs() tasks.Outputs
}

// kind is one value of the kind attribute: which attributes it takes and how it checks.
type kind struct {
	attrs    []string // kind-specific attributes it accepts
	required []string
	validate func(w *WaitReady) error // offline checks beyond presence
	what     func(w *WaitReady) string
	newProbe func(w *WaitReady) (probe, error)
}

// kinds maps each kind to its definition; each lives in a file named after it.
var kinds = map[string]*kind{
	"tcp":               &tcpKind,
	"http":              &httpKind,
	"kube_api":          &kubeAPIKind,
	"nodes":             &nodesKind,
	"deployment":        &deploymentKind,
	"pods":              &podsKind,
	"karmada_clusters":  &karmadaClustersKind,
	"karmada_placement": &karmadaPlacementKind,
	"condition":         &conditionKind,
}

func kindNames() string {
	var names []string
	for n := range kinds {
		names = append(names, strconv.Quote(n))
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

// attrSet says whether one kind-specific attribute is written.
type attrSet struct {
	name string
	set  bool
}

// kindAttrs lists every kind-specific attribute and whether it is set, in field order.
func (w *WaitReady) kindAttrs() []attrSet {
	return []attrSet{
		{"address", w.Address != ""},
		{"url", w.URL != ""},
		{"expect_status", w.ExpectStatus != nil},
		{"body_match", w.BodyMatch != ""},
		{"insecure", w.Insecure != nil},
		{"ca_file", w.CAFile != ""},
		{"headers", w.Headers != nil},
		{"kubeconfig", w.Kubeconfig != ""},
		{"context", w.Context != ""},
		{"name", w.Name != ""},
		{"namespace", w.Namespace != ""},
		{"selector", w.Selector != ""},
		{"min_count", w.MinCount != nil},
		{"clusters", w.Clusters != nil},
		{"placement_present", w.PlacementPresent != nil},
		{"placement_absent", w.PlacementAbsent != nil},
		{"api_version", w.APIVersion != ""},
		{"object_kind", w.ObjectKind != ""},
		{"condition", w.Condition != ""},
		{"condition_status", w.ConditionStatus != ""},
	}
}

// checkPresence rejects attributes of other kinds, then missing required ones.
func (w *WaitReady) checkPresence(k *kind) error {
	for _, a := range w.kindAttrs() {
		if a.set && !slices.Contains(k.attrs, a.name) {
			return &tasks.AttrError{Attr: a.name, Err: fmt.Errorf("not used by kind %q", w.Kind)}
		}
	}
	for _, a := range w.kindAttrs() {
		if !a.set && slices.Contains(k.required, a.name) {
			return &tasks.AttrError{Attr: a.name, Err: fmt.Errorf("required for kind %q", w.Kind)}
		}
	}
	return nil
}

// errorState describes a failed check by its cause.
func errorState(err error) string { return "error: " + progress.ErrorCause(err) }
