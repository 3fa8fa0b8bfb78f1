package image

import (
	"context"
	"fmt"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// fetchImage resolves ref to the image for plat: the manifest itself, or the
// matching one from an index. It returns the image and its manifest digest;
// layers are fetched only when read. The registry's scopes must have been
// declared on s.
func fetchImage(ctx context.Context, s *sessions, ref name.Reference, plat v1.Platform) (v1.Image, v1.Hash, error) {
	reg := ref.Context().Registry
	sess, err := s.get(reg)
	if err != nil {
		return nil, v1.Hash{}, fmt.Errorf("registry %q: %w", reg.RegistryStr(), describe(err))
	}
	desc, err := sess.puller.Get(ctx, ref)
	if err != nil {
		return nil, v1.Hash{}, fmt.Errorf("registry %q: %w", reg.RegistryStr(), describe(err))
	}
	if !desc.MediaType.IsIndex() {
		img, err := desc.Image()
		return img, desc.Digest, err
	}
	idx, err := desc.ImageIndex()
	if err != nil {
		return nil, v1.Hash{}, err
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return nil, v1.Hash{}, err
	}
	child, err := pickManifest(im, plat)
	if err != nil {
		return nil, v1.Hash{}, err
	}
	img, err := idx.Image(child.Digest)
	if err != nil {
		return nil, v1.Hash{}, fmt.Errorf("registry %q: %w", reg.RegistryStr(), describe(err))
	}
	return img, child.Digest, nil
}
