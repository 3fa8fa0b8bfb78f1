package image

import (
	"fmt"
	"sync"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// blobHomes remembers, for one run, which target repository holds which layer,
// so that an image sharing a base layer with one copied before it gets that
// layer by a cross-repository mount instead of a second upload. Registries
// like distribution keep blobs per repository: a HEAD in the new repository
// says "missing" even though the registry has the bytes.
type blobHomes struct {
	mu sync.Mutex
	m  map[v1.Hash]name.Repository
}

func newBlobHomes() *blobHomes { return &blobHomes{m: map[v1.Hash]name.Repository{}} }

// pendingBlobs collects the layers of one push; they become homes only once
// the push has succeeded.
type pendingBlobs struct {
	mu      sync.Mutex
	digests []v1.Hash
}

func (p *pendingBlobs) add(h v1.Hash) {
	p.mu.Lock()
	p.digests = append(p.digests, h)
	p.mu.Unlock()
}

// settle records every layer of a finished push as living in repo.
func (b *blobHomes) settle(p *pendingBlobs, repo name.Repository) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, h := range p.digests {
		if _, ok := b.m[h]; !ok {
			b.m[h] = repo
		}
	}
}

// home returns a repository other than repo known to hold h.
func (b *blobHomes) home(h v1.Hash, repo name.Repository) (name.Repository, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	home, ok := b.m[h]
	return home, ok && home.Name() != repo.Name()
}

// image wraps img so that its layers mount from their homes when pushed to repo.
func (b *blobHomes) image(img v1.Image, repo name.Repository, p *pendingBlobs) v1.Image {
	return &mountingImage{Image: img, homes: b, repo: repo, pending: p}
}

// index wraps idx so that the images in it mount their layers.
func (b *blobHomes) index(idx v1.ImageIndex, repo name.Repository, p *pendingBlobs) v1.ImageIndex {
	return &mountingIndex{base: idx, homes: b, repo: repo, pending: p}
}

type mountingImage struct {
	v1.Image
	homes   *blobHomes
	repo    name.Repository
	pending *pendingBlobs
}

// Layers returns the layers, those with a known home as mountable from it.
func (m *mountingImage) Layers() ([]v1.Layer, error) {
	layers, err := m.Image.Layers()
	if err != nil {
		return nil, err
	}
	out := make([]v1.Layer, len(layers))
	for i, l := range layers {
		out[i] = l
		h, err := l.Digest()
		if err != nil {
			continue // streaming layer: nothing to mount
		}
		m.pending.add(h)
		if home, ok := m.homes.home(h, m.repo); ok {
			out[i] = &remote.MountableLayer{Layer: l, Reference: home.Digest(h.String())}
		}
	}
	return out, nil
}

// mountingIndex is an index whose images mount their layers. It cannot embed
// v1.ImageIndex: that interface has a method of the same name.
type mountingIndex struct {
	base    v1.ImageIndex
	homes   *blobHomes
	repo    name.Repository
	pending *pendingBlobs
}

func (m *mountingIndex) MediaType() (types.MediaType, error)       { return m.base.MediaType() }
func (m *mountingIndex) Digest() (v1.Hash, error)                  { return m.base.Digest() }
func (m *mountingIndex) Size() (int64, error)                      { return m.base.Size() }
func (m *mountingIndex) IndexManifest() (*v1.IndexManifest, error) { return m.base.IndexManifest() }
func (m *mountingIndex) RawManifest() ([]byte, error)              { return m.base.RawManifest() }

func (m *mountingIndex) Image(h v1.Hash) (v1.Image, error) {
	img, err := m.base.Image(h)
	if err != nil {
		return nil, err
	}
	return m.homes.image(img, m.repo, m.pending), nil
}

func (m *mountingIndex) ImageIndex(h v1.Hash) (v1.ImageIndex, error) {
	idx, err := m.base.ImageIndex(h)
	if err != nil {
		return nil, err
	}
	return m.homes.index(idx, m.repo, m.pending), nil
}

// Layer forwards to the index's own Layer, which go-containerregistry uses for
// children that are neither images nor indexes.
func (m *mountingIndex) Layer(h v1.Hash) (v1.Layer, error) {
	if wl, ok := m.base.(interface {
		Layer(v1.Hash) (v1.Layer, error)
	}); ok {
		return wl.Layer(h)
	}
	return nil, fmt.Errorf("index child %s is neither an image nor an index", h)
}
