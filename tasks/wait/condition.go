package wait

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/validation/path"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/flowdev/flow/tasks"
	"github.com/flowdev/flow/tasks/kube"
)

// conditionKind is ready when any object, named by api_version, object_kind, name and
// namespace, has status condition `condition` with status condition_status.
var conditionKind = kind{
	attrs:    withKubeConn("api_version", "object_kind", "name", "namespace", "condition", "condition_status"),
	required: []string{"api_version", "object_kind", "name", "condition"},
	validate: validateCondition,
	what:     conditionWhat,
	newProbe: newConditionProbe,
}

// conditionWhat reads "condition Scheduled=True on ResourceBinding karmada-demo/web".
func conditionWhat(w *WaitReady) string {
	object := w.Name
	if w.Namespace != "" {
		object = w.Namespace + "/" + w.Name
	}
	return fmt.Sprintf("condition %s=%s on %s %s%s", w.Condition, w.conditionStatus(), w.ObjectKind, object, kubeWhere(w))
}

// conditionStatus is condition_status, "True" when unset.
func (w *WaitReady) conditionStatus() string {
	if w.ConditionStatus == "" {
		return "True"
	}
	return w.ConditionStatus
}

var kindName = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9]*$`)

func validateCondition(w *WaitReady) error {
	gv, err := schema.ParseGroupVersion(w.APIVersion)
	if err == nil && gv.Version == "" {
		err = errors.New("version is missing")
	}
	if err != nil {
		return &tasks.AttrError{Attr: "api_version", Err: fmt.Errorf(`want "VERSION" or "GROUP/VERSION" such as "apps/v1": %w`, err)}
	}
	if !kindName.MatchString(w.ObjectKind) {
		return &tasks.AttrError{Attr: "object_kind", Err: fmt.Errorf("%q is not a kind such as \"Deployment\"", w.ObjectKind)}
	}
	if errs := path.IsValidPathSegmentName(w.Name); len(errs) > 0 {
		return &tasks.AttrError{Attr: "name", Err: fmt.Errorf("%q is not a valid name: %s", w.Name, errs[0])}
	}
	if err := validateNamespace(w); err != nil {
		return err
	}
	if strings.ContainsFunc(w.Condition, func(r rune) bool { return r <= ' ' }) {
		return &tasks.AttrError{Attr: "condition", Err: fmt.Errorf("%q must not contain spaces or control characters", w.Condition)}
	}
	if s := w.conditionStatus(); !slices.Contains([]string{"True", "False", "Unknown"}, s) {
		return &tasks.AttrError{Attr: "condition_status", Err: fmt.Errorf(`must be "True", "False" or "Unknown", not %q`, s)}
	}
	return nil
}

// conditionProbe maps the kind to its resource through discovery on every check
// until it is found, so a wait may start before the CRD that defines it is applied.
type conditionProbe struct {
	client    dynamic.Interface
	mapper    *kube.Mapper
	kind      schema.GroupKind
	version   string
	name      string
	namespace string // "" for the default
	condition string
	want      string
}

func newConditionProbe(w *WaitReady) (probe, error) {
	cfg, err := kubeConfig(w)
	if err != nil {
		return nil, err
	}
	client, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("create client: %w", err)
	}
	t, _ := w.timing() // Validate parsed it
	dcfg := rest.CopyConfig(cfg)
	dcfg.Timeout = t.request
	mapper, err := kube.NewMapper(dcfg)
	if err != nil {
		return nil, err
	}
	gv, _ := schema.ParseGroupVersion(w.APIVersion) // Validate parsed it
	return &conditionProbe{
		client:    client,
		mapper:    mapper,
		kind:      gv.WithKind(w.ObjectKind).GroupKind(),
		version:   gv.Version,
		name:      w.Name,
		namespace: w.Namespace,
		condition: w.Condition,
		want:      w.conditionStatus(),
	}, nil
}

func (p *conditionProbe) check(ctx context.Context) (bool, string, error) {
	mapping, err := p.mapper.RESTMapping(ctx, p.kind, p.version)
	if ctx.Err() != nil {
		return false, "", nil // the wait's end or request_timeout says what happened
	}
	if err != nil {
		p.mapper.Reset() // discover again next time: the CRD may be applied by then
		if meta.IsNoMatchError(err) {
			return false, err.Error(), nil
		}
		return false, errorState(err), nil
	}
	var resource dynamic.ResourceInterface = p.client.Resource(mapping.Resource)
	switch {
	case mapping.Scope.Name() == meta.RESTScopeNameNamespace:
		ns := p.namespace
		if ns == "" {
			ns = "default"
		}
		resource = p.client.Resource(mapping.Resource).Namespace(ns)
	case p.namespace != "":
		return false, "", fmt.Errorf("%s is cluster-scoped: remove namespace %q", p.kind.Kind, p.namespace)
	}
	obj, err := resource.Get(ctx, p.name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return false, "not found", nil
	case err != nil:
		return false, errorState(err), nil
	}
	c, ok := findCondition(obj, p.condition)
	if !ok {
		return false, fmt.Sprintf("condition %s not set", p.condition), nil
	}
	state := fmt.Sprintf("condition %s=%s%s", p.condition, c.status, reasonSuffix(c.reason))
	// A condition written for an older spec says nothing about the current one.
	if c.observedGeneration != 0 && c.observedGeneration < obj.GetGeneration() {
		return false, fmt.Sprintf("%s, observed generation %d of %d", state, c.observedGeneration, obj.GetGeneration()), nil
	}
	return c.status == p.want, state, nil
}

var _ probe = (*conditionProbe)(nil)
