package kube

import (
	"context"
	"fmt"
	"time"

	"github.com/flowdev/flow/tasks"
	"github.com/zclconf/go-cty/cty"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
)

// discoveryTimeout bounds each discovery request, so a server that accepts the
// connection but never answers costs seconds, not the whole run's timeout.
const discoveryTimeout = 30 * time.Second

var (
	namespaceKind = schema.GroupKind{Kind: "Namespace"}
	crdKind       = schema.GroupKind{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}
)

// Run runs run, again while it fails with a transient fault: server-side apply
// is idempotent, and objects applied before the fault are unchanged the next time.
func (a *Apply) Run(ctx context.Context, env *tasks.Env) (tasks.Outputs, error) {
	return tasks.RetryTransient(ctx, env, TransientFault, func() (tasks.Outputs, error) { return a.run(ctx, env) })
}

// run reads the manifests, checks every kind against the server, then applies
// Namespaces, CRDs (waiting for Established) and the rest, in that order.
func (a *Apply) run(ctx context.Context, env *tasks.Env) (tasks.Outputs, error) {
	if err := a.Validate(); err != nil {
		return nil, err
	}
	crdTimeout, _ := a.crdTimeout()
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("apply not started: %w", err)
	}
	manifests, err := readManifests(env.InDirAll(a.Files), a.Content)
	if err != nil {
		return nil, err
	}
	ap, err := a.newApplier(env)
	if err != nil {
		return nil, err
	}
	namespaces, crds, rest := partition(manifests)
	if err := ap.checkKinds(ctx, rest, crds); err != nil {
		return nil, err
	}
	var refs []cty.Value
	for _, m := range namespaces {
		if refs, err = ap.applyTo(ctx, m, refs); err != nil {
			return nil, err
		}
	}
	for _, m := range crds {
		if refs, err = ap.applyTo(ctx, m, refs); err != nil {
			return nil, err
		}
	}
	for _, m := range crds { // the server establishes them meanwhile
		if err := ap.waitEstablished(ctx, m.obj.GetName(), crdTimeout); err != nil {
			return nil, err
		}
	}
	if len(crds) > 0 {
		ap.mapper.Reset() // discover the kinds the CRDs added
	}
	for _, m := range rest {
		if refs, err = ap.applyTo(ctx, m, refs); err != nil {
			return nil, err
		}
	}
	if len(refs) == 0 {
		fmt.Fprintln(env.Stdout, "no objects to apply")
		return tasks.Outputs{"objects": cty.ListValEmpty(objectRefType)}, nil
	}
	return tasks.Outputs{"objects": cty.ListVal(refs)}, nil
}

// newApplier connects to the cluster of kubeconfig and context.
func (a *Apply) newApplier(env *tasks.Env) (*applier, error) {
	cfg, err := RESTConfig(env.InDir(a.Kubeconfig), a.Context)
	if err != nil {
		return nil, err
	}
	// The server's warnings (deprecated APIs, fields, labels) are the user's to
	// see; client-go's default would log them to the process's stderr.
	cfg.WarningHandler = rest.NewWarningWriter(env.Stderr, rest.WarningWriterOptions{Deduplicate: true})
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", cfg.Host, err)
	}
	dcfg := rest.CopyConfig(cfg)
	dcfg.Timeout = discoveryTimeout
	mapper, err := NewMapper(dcfg)
	if err != nil {
		return nil, err
	}
	return &applier{
		dyn:       dyn,
		mapper:    mapper,
		fieldMgr:  a.fieldManager(),
		force:     a.Force,
		namespace: a.namespace(),
		env:       env,
	}, nil
}

// partition splits manifests into Namespaces, CRDs and the rest, each in document order.
func partition(ms []*manifest) (namespaces, crds, rest []*manifest) {
	for _, m := range ms {
		switch m.obj.GroupVersionKind().GroupKind() {
		case namespaceKind:
			namespaces = append(namespaces, m)
		case crdKind:
			crds = append(crds, m)
		default:
			rest = append(rest, m)
		}
	}
	return namespaces, crds, rest
}

// applyTo applies m and appends its reference to refs.
func (ap *applier) applyTo(ctx context.Context, m *manifest, refs []cty.Value) ([]cty.Value, error) {
	ref, err := ap.apply(ctx, m)
	if err != nil {
		return refs, err
	}
	return append(refs, ref), nil
}
