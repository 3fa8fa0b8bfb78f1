package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
)

// Mapper maps a kind in one group version to its resource by asking the server
// for that group version's resource list (GET /api/v1 or /apis/GROUP/VERSION),
// once per group version until Reset.
//
// It replaces client-go's discovery client and REST mapper, which link
// client-go's typed scheme of every built-in API: registering that scheme is
// most of the start-up cost of every flow command, Kubernetes or not. Unlike
// those, every lookup honours its context.
//
// A Mapper is safe for concurrent use; its zero value is not usable (NewMapper).
type Mapper struct {
	client *rest.RESTClient

	mu    sync.Mutex
	lists map[schema.GroupVersion]*metav1.APIResourceList
}

// NewMapper returns a Mapper for the server of cfg.
func NewMapper(cfg *rest.Config) (*Mapper, error) {
	client, err := RawClient(cfg)
	if err != nil {
		return nil, err
	}
	return &Mapper{client: client, lists: map[schema.GroupVersion]*metav1.APIResourceList{}}, nil
}

// RawClient is a REST client for paths outside any API group (/readyz, discovery),
// speaking JSON with cfg's credentials.
func RawClient(cfg *rest.Config) (*rest.RESTClient, error) {
	client, err := rest.UnversionedRESTClientFor(dynamic.ConfigFor(cfg))
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", cfg.Host, err)
	}
	return client, nil
}

// Reset forgets every resource list, so the next lookups see kinds added since
// (by CRDs applied meanwhile).
func (m *Mapper) Reset() {
	m.mu.Lock()
	defer m.mu.Unlock()
	clear(m.lists)
}

// RESTMapping finds kind gk in version. A group version or kind the server does
// not serve is a meta.NoKindMatchError: `no matches for kind "K" in version "G/V"`.
func (m *Mapper) RESTMapping(ctx context.Context, gk schema.GroupKind, version string) (*meta.RESTMapping, error) {
	gv := schema.GroupVersion{Group: gk.Group, Version: version}
	list, err := m.resources(ctx, gv)
	if apierrors.IsNotFound(err) {
		return nil, &meta.NoKindMatchError{GroupKind: gk, SearchedVersions: []string{version}}
	}
	if err != nil {
		return nil, err
	}
	for _, r := range list.APIResources {
		if r.Kind != gk.Kind || strings.Contains(r.Name, "/") { // a subresource such as deployments/scale
			continue
		}
		scope := meta.RESTScopeRoot
		if r.Namespaced {
			scope = meta.RESTScopeNamespace
		}
		return &meta.RESTMapping{
			Resource:         gv.WithResource(r.Name),
			GroupVersionKind: gv.WithKind(gk.Kind),
			Scope:            scope,
		}, nil
	}
	return nil, &meta.NoKindMatchError{GroupKind: gk, SearchedVersions: []string{version}}
}

// resources returns gv's resource list, from the cache or the server.
func (m *Mapper) resources(ctx context.Context, gv schema.GroupVersion) (*metav1.APIResourceList, error) {
	m.mu.Lock()
	list, ok := m.lists[gv]
	m.mu.Unlock()
	if ok {
		return list, nil
	}
	path := "/apis/" + gv.Group + "/" + gv.Version
	if gv.Group == "" {
		path = "/api/" + gv.Version
	}
	body, err := m.client.Get().AbsPath(path).DoRaw(ctx)
	if err != nil {
		return nil, err
	}
	list = &metav1.APIResourceList{}
	if err := json.Unmarshal(body, list); err != nil {
		return nil, fmt.Errorf("discovery %s: %w", path, err)
	}
	m.mu.Lock()
	m.lists[gv] = list
	m.mu.Unlock()
	return list, nil
}
