package kube

import (
	"context"
	"fmt"
	"time"

	"github.com/zclconf/go-cty/cty"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/flowdev/flow/tasks"
)

// applier applies manifests to one cluster through the dynamic client, mapping
// kinds to resources by discovery.
type applier struct {
	dyn       dynamic.Interface
	mapper    *Mapper
	fieldMgr  string
	force     bool
	namespace string // for namespaced objects that name none
	env       *tasks.Env

	// crdKinds are the kinds the manifests' CRDs define, which may be missing
	// from discovery until those CRDs are applied and Established.
	crdKinds map[string]bool
}

// mappingRetry is how often a kind one of the applied CRDs defines is looked up
// again while discovery does not list it yet, and for how long.
const (
	mappingRetryInterval = 250 * time.Millisecond
	mappingRetryFor      = 30 * time.Second
)

// checkKinds fails, before anything is applied, on a kind the server does not
// serve unless one of crds defines it.
func (ap *applier) checkKinds(ctx context.Context, ms, crds []*manifest) error {
	ap.crdKinds = map[string]bool{}
	for _, crd := range crds {
		for _, gvk := range definedKinds(crd.obj) {
			ap.crdKinds[gvk] = true
		}
	}
	for _, m := range ms {
		gvk := m.obj.GroupVersionKind()
		_, err := ap.mapper.RESTMapping(ctx, gvk.GroupKind(), gvk.Version)
		if ctx.Err() != nil {
			return fmt.Errorf("%s: look up kind: %w", m, ctx.Err())
		}
		if meta.IsNoMatchError(err) && ap.crdKinds[gvk.String()] {
			continue
		}
		if err != nil {
			return mappingError(m, err)
		}
	}
	return nil
}

func mappingError(m *manifest, err error) error {
	if meta.IsNoMatchError(err) {
		return fmt.Errorf("%s: unknown kind: the server does not serve it and no CustomResourceDefinition in the manifests defines it", m)
	}
	return fmt.Errorf("%s: look up kind: %w", m, err)
}

// mapping looks m's kind up; a kind of an applied CRD is retried while discovery
// catches up.
func (ap *applier) mapping(ctx context.Context, m *manifest) (*meta.RESTMapping, error) {
	gvk := m.obj.GroupVersionKind()
	deadline := time.Now().Add(mappingRetryFor)
	for {
		mapping, err := ap.mapper.RESTMapping(ctx, gvk.GroupKind(), gvk.Version)
		if err == nil {
			return mapping, nil
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%s: look up kind: %w", m, ctx.Err())
		}
		if !meta.IsNoMatchError(err) || !ap.crdKinds[gvk.String()] || time.Now().After(deadline) {
			return nil, mappingError(m, err)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%s: look up kind: %w", m, ctx.Err())
		case <-time.After(mappingRetryInterval):
		}
		ap.mapper.Reset()
	}
}

// apply server-side applies m, prints what happened and returns its reference.
func (ap *applier) apply(ctx context.Context, m *manifest) (cty.Value, error) {
	mapping, err := ap.mapping(ctx, m)
	if err != nil {
		return cty.NilVal, err
	}
	obj := m.obj
	var res dynamic.ResourceInterface = ap.dyn.Resource(mapping.Resource)
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		if obj.GetNamespace() == "" {
			obj.SetNamespace(ap.namespace)
		}
		res = ap.dyn.Resource(mapping.Resource).Namespace(obj.GetNamespace())
	} else {
		obj.SetNamespace("") // as kubectl: a namespace on a cluster-scoped object means nothing
	}
	label := objectLabel(obj.GetAPIVersion(), obj.GetKind(), obj.GetNamespace(), obj.GetName())

	before, err := res.Get(ctx, obj.GetName(), metav1.GetOptions{})
	exists := err == nil
	if err != nil && !apierrors.IsNotFound(err) {
		return cty.NilVal, fmt.Errorf("get %s: %w", label, err)
	}
	verb := "unchanged"
	if !exists || !applyIsNoOp(obj, before, ap.fieldMgr) {
		after, err := res.Apply(ctx, obj.GetName(), obj, metav1.ApplyOptions{FieldManager: ap.fieldMgr, Force: ap.force})
		if apierrors.IsConflict(err) && !ap.force {
			return cty.NilVal, fmt.Errorf("apply %s (%s): %w; set force = true to take these fields over", label, m.where, err)
		}
		if err != nil {
			return cty.NilVal, fmt.Errorf("apply %s (%s): %w", label, m.where, err)
		}
		switch {
		case !exists:
			verb = "created"
		case before.GetResourceVersion() != after.GetResourceVersion():
			verb = "configured"
		}
	}
	fmt.Fprintf(ap.env.Stdout, "%s %s\n", verb, label)
	return cty.ObjectVal(map[string]cty.Value{
		"api_version": cty.StringVal(obj.GetAPIVersion()),
		"kind":        cty.StringVal(obj.GetKind()),
		"namespace":   cty.StringVal(obj.GetNamespace()),
		"name":        cty.StringVal(obj.GetName()),
	}), nil
}

// objectLabel renders `apps/v1 Deployment default/nginx` or `v1 Namespace web`.
func objectLabel(apiVersion, kind, namespace, name string) string {
	if namespace != "" {
		name = namespace + "/" + name
	}
	return apiVersion + " " + kind + " " + name
}

// applyIsNoOp reports whether applying obj to live could change nothing but
// bookkeeping: obj sets no field besides its identity, and manager owns no field of
// live that the apply could release. Applying such an object to one without
// managedFields (which is what creating it from a bare manifest leaves) makes the
// server record a "before-first-apply" manager and a new resourceVersion, so a
// re-apply would never be "unchanged".
func applyIsNoOp(obj, live *unstructured.Unstructured, manager string) bool {
	for k := range obj.Object {
		if k != "apiVersion" && k != "kind" && k != "metadata" {
			return false
		}
	}
	md, _ := obj.Object["metadata"].(map[string]any)
	for k := range md {
		if k != "name" && k != "namespace" {
			return false
		}
	}
	for _, mf := range live.GetManagedFields() {
		if mf.Manager == manager && mf.Operation == metav1.ManagedFieldsOperationApply {
			return false
		}
	}
	return true
}
