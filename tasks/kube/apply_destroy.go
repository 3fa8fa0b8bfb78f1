package kube

import (
	"context"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/flowdev/flow/tasks"
)

// objectRef names one applied object.
type objectRef struct{ apiVersion, kind, namespace, name string }

// Destroy deletes the objects the run applied, in reverse apply order: the objects
// output it recorded or, without one (the run failed part way), the objects the
// manifests name. An object, or a kind, that is gone already is skipped. Deletion
// is requested, not awaited: a Namespace finishes deleting its contents on its own.
func (a *Apply) Destroy(ctx context.Context, env *tasks.Env, recorded tasks.Outputs) error {
	refs, err := a.appliedObjects(recorded)
	if err != nil {
		return err
	}
	ap, err := a.newApplier(env)
	if err != nil {
		return err
	}
	for _, ref := range slices.Backward(refs) {
		if err := ap.delete(ctx, ref); err != nil {
			return err
		}
	}
	return nil
}

func (a *Apply) appliedObjects(recorded tasks.Outputs) ([]objectRef, error) {
	if objs, ok := recorded["objects"]; ok && objs.IsKnown() && !objs.IsNull() {
		var refs []objectRef
		for it := objs.ElementIterator(); it.Next(); {
			_, o := it.Element()
			refs = append(refs, objectRef{o.GetAttr("api_version").AsString(), o.GetAttr("kind").AsString(),
				o.GetAttr("namespace").AsString(), o.GetAttr("name").AsString()})
		}
		return refs, nil
	}
	manifests, err := readManifests(a.Files, a.Content)
	if err != nil {
		return nil, fmt.Errorf("find the objects to delete: %w", err)
	}
	namespaces, crds, rest := partition(manifests)
	var refs []objectRef
	for _, m := range slices.Concat(namespaces, crds, rest) {
		refs = append(refs, objectRef{m.obj.GetAPIVersion(), m.obj.GetKind(), m.obj.GetNamespace(), m.obj.GetName()})
	}
	return refs, nil
}

// delete deletes one object; its namespace defaults as in apply.
func (ap *applier) delete(ctx context.Context, ref objectRef) error {
	ri, label, err := ap.resource(ctx, ref)
	if err != nil {
		return err
	}
	if ri == nil {
		fmt.Fprintf(ap.env.Stdout, "%s already absent (the server no longer serves its kind)\n", label)
		return nil
	}
	background := metav1.DeletePropagationBackground
	err = ri.Delete(ctx, ref.name, metav1.DeleteOptions{PropagationPolicy: &background})
	switch {
	case apierrors.IsNotFound(err):
		fmt.Fprintf(ap.env.Stdout, "%s already absent\n", label)
	case err != nil:
		return fmt.Errorf("delete %s: %w", label, err)
	default:
		fmt.Fprintf(ap.env.Stdout, "deleted %s\n", label)
	}
	return nil
}

// resource is the client for ref's kind, in its namespace (defaulted as in apply),
// and ref's label; a nil client when the server no longer serves the kind.
func (ap *applier) resource(ctx context.Context, ref objectRef) (dynamic.ResourceInterface, string, error) {
	label := objectLabel(ref.apiVersion, ref.kind, ref.namespace, ref.name)
	gv, err := schema.ParseGroupVersion(ref.apiVersion)
	if err != nil {
		return nil, label, fmt.Errorf("%s: %w", label, err)
	}
	mapping, err := ap.mapper.RESTMapping(ctx, schema.GroupKind{Group: gv.Group, Kind: ref.kind}, gv.Version)
	if meta.IsNoMatchError(err) {
		return nil, label, nil
	}
	if err != nil {
		return nil, label, fmt.Errorf("%s: look up kind: %w", label, err)
	}
	res := ap.dyn.Resource(mapping.Resource)
	if mapping.Scope.Name() != meta.RESTScopeNameNamespace {
		return res, objectLabel(ref.apiVersion, ref.kind, "", ref.name), nil
	}
	if ref.namespace == "" {
		ref.namespace = ap.namespace
	}
	return res.Namespace(ref.namespace), objectLabel(ref.apiVersion, ref.kind, ref.namespace, ref.name), nil
}

var _ tasks.Destroyer = (*Apply)(nil)
