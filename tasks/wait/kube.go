package wait

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/flowdev/flow/tasks"
	"github.com/flowdev/flow/tasks/kube"
)

// withKubeConn lists a Kubernetes kind's attributes: the connection ones first.
func withKubeConn(attrs ...string) []string {
	return append([]string{"kubeconfig", "context"}, attrs...)
}

// kubeWhere names a kubeconfig or context that is not the default, for a kind's what:
// " in context member2 of lab.kubeconfig".
func kubeWhere(w *WaitReady) string {
	switch {
	case w.Context != "" && w.Kubeconfig != "":
		return " in context " + w.Context + " of " + w.Kubeconfig
	case w.Context != "":
		return " in context " + w.Context
	case w.Kubeconfig != "":
		return " in " + w.Kubeconfig
	}
	return ""
}

// kubeConfig loads the connection. Its errors end the wait: no later check can
// make a missing kubeconfig or context appear.
func kubeConfig(w *WaitReady) (*rest.Config, error) {
	cfg, err := kube.RESTConfig(w.Kubeconfig, w.Context)
	if err != nil {
		return nil, err
	}
	cfg.WarningHandler = rest.NoWarnings{} // deprecation warnings would go to the process's stderr
	return cfg, nil
}

func kubeDynamic(w *WaitReady) (*dynamic.DynamicClient, error) {
	cfg, err := kubeConfig(w)
	if err != nil {
		return nil, err
	}
	c, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("create client: %w", err)
	}
	return c, nil
}

// namespace is the namespace of a namespaced object: namespace, or "default".
func (w *WaitReady) namespace() string {
	if w.Namespace == "" {
		return "default"
	}
	return w.Namespace
}

// minCount is min_count, 1 when unset.
func (w *WaitReady) minCount() int {
	if w.MinCount == nil {
		return 1
	}
	return *w.MinCount
}

func validateMinCount(w *WaitReady) error {
	if w.MinCount != nil && *w.MinCount < 0 {
		return &tasks.AttrError{Attr: "min_count", Err: fmt.Errorf("must not be negative, got %d", *w.MinCount)}
	}
	return nil
}

func validateNamespace(w *WaitReady) error {
	if w.Namespace == "" {
		return nil
	}
	if errs := validation.IsDNS1123Label(w.Namespace); len(errs) > 0 {
		return &tasks.AttrError{Attr: "namespace", Err: fmt.Errorf("%q is not a namespace name: %s", w.Namespace, errs[0])}
	}
	return nil
}

// validateDNSName checks a name that Kubernetes requires to be a DNS subdomain.
func validateDNSName(attr, name string) error {
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return &tasks.AttrError{Attr: attr, Err: fmt.Errorf("%q is not a valid name: %s", name, errs[0])}
	}
	return nil
}

// countState describes a set of objects of which ready are ready: "2/3 nodes Ready
// (member2: NotReady)", with ", want at least N" when there are too few.
func countState(noun string, ready, total, min int, notReady []string) string {
	var b strings.Builder
	if total == 0 {
		b.WriteString("no " + noun)
	} else {
		fmt.Fprintf(&b, "%d/%d %s Ready", ready, total, noun)
	}
	if len(notReady) > 0 {
		b.WriteString(" (" + summarize(notReady) + ")")
	}
	if total < min {
		fmt.Fprintf(&b, ", want at least %d", min)
	}
	return b.String()
}

// summarize joins descriptions of what is not ready, naming at most a few so a state
// stays one readable line.
func summarize(items []string) string {
	const most = 5
	if len(items) <= most {
		return strings.Join(items, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(items[:most], ", "), len(items)-most)
}

// condition is one entry of an object's status.conditions.
type condition struct {
	status, reason, message string
	observedGeneration      int64
}

// findCondition returns the status condition of type typ of an object read through
// the dynamic client. Fields of the wrong type read as empty: a malformed condition
// is not ready rather than an error.
func findCondition(obj *unstructured.Unstructured, typ string) (condition, bool) {
	list, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, item := range list {
		m, ok := item.(map[string]any)
		if !ok {
			continue
		}
		if t, _, _ := unstructured.NestedString(m, "type"); t != typ {
			continue
		}
		var c condition
		c.status, _, _ = unstructured.NestedString(m, "status")
		c.reason, _, _ = unstructured.NestedString(m, "reason")
		c.message, _, _ = unstructured.NestedString(m, "message")
		c.observedGeneration, _, _ = unstructured.NestedInt64(m, "observedGeneration")
		return c, true
	}
	return condition{}, false
}

// reasonSuffix is " (reason: R)", or "" without a reason.
func reasonSuffix(reason string) string {
	if reason == "" {
		return ""
	}
	return " (reason: " + reason + ")"
}

// validateNoDuplicates rejects a list attribute that names one value twice.
func validateNoDuplicates(attr string, values []string) error {
	for i, v := range values {
		if slices.Contains(values[:i], v) {
			return &tasks.AttrError{Attr: attr, Err: fmt.Errorf("%q is listed twice", v)}
		}
	}
	return nil
}
