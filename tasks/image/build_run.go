package image

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strings"

	"github.com/flowdev/flow/tasks"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/zclconf/go-cty/cty"
)

// Run builds the image, then pushes it and writes the tarball unless they
// already hold it.
func (b *Build) Run(ctx context.Context, env *tasks.Env) (tasks.Outputs, error) {
	s := newSessions(ctx, env.Stderr)
	opts := nameOptions(b.Insecure)
	var push name.Tag
	if b.Push != "" {
		push, _ = name.NewTag(b.Push, opts...)
		s.push(push.Context())
	}
	var key string
	if b.cacheable() {
		key, _ = b.inputsKey(env) // unreadable inputs fail the build below, with its own error
		if out, ok := b.unchanged(ctx, s, push, key, env); ok {
			return out, nil
		}
	}
	img, err := b.image(ctx, s, env)
	if err != nil {
		return nil, err
	}
	digest, err := img.Digest()
	if err != nil {
		return nil, fmt.Errorf("build: %w", err)
	}
	out := tasks.Outputs{"digest": cty.StringVal(digest.String()), "tarball": cty.StringVal("")}
	if b.Push != "" {
		if err := pushImage(ctx, s, push, img, digest, env); err != nil {
			return nil, err
		}
		out["reference"] = cty.StringVal(pinned(push.Context(), digest))
		if key != "" {
			rememberDigest(b.Push, key, digest)
		}
	}
	if b.Tarball != "" {
		tag, abs, err := b.writeTarball(img, push, env)
		if err != nil {
			return nil, err
		}
		if b.Push == "" {
			out["reference"] = cty.StringVal(tag.String())
		}
		out["tarball"] = cty.StringVal(abs)
	}
	return out, nil
}

// unchanged reports the outputs of the last build with these inputs when the registry
// still holds its digest under push (see build_cache.go).
func (b *Build) unchanged(ctx context.Context, s *sessions, push name.Tag, key string, env *tasks.Env) (tasks.Outputs, bool) {
	digest, ok := cachedDigest(b.Push, key)
	if key == "" || !ok {
		return nil, false
	}
	sess, err := s.get(push.Context().Registry)
	if err != nil {
		return nil, false
	}
	if got, err := sess.puller.Head(ctx, push); err != nil || got.Digest != digest {
		return nil, false
	}
	fmt.Fprintf(env.Stdout, "%s: already present (inputs unchanged since it was built)\n", pinned(push.Context(), digest))
	return tasks.Outputs{"digest": cty.StringVal(digest.String()), "tarball": cty.StringVal(""),
		"reference": cty.StringVal(pinned(push.Context(), digest))}, true
}

// writeTarball saves img to the tarball under tag, or else push; it returns
// the name used and the tarball's absolute path.
func (b *Build) writeTarball(img v1.Image, push name.Tag, env *tasks.Env) (name.Tag, string, error) {
	tag := push
	if b.Tag != "" {
		tag, _ = name.NewTag(b.Tag, nameOptions(b.Insecure)...)
	}
	abs, err := filepath.Abs(env.InDir(b.Tarball))
	if err != nil {
		return name.Tag{}, "", fmt.Errorf("tarball %q: %w", b.Tarball, err)
	}
	return tag, abs, saveTarball(abs, tag, img, env)
}

// image assembles base, layers and config; relative layer sources are env's.
func (b *Build) image(ctx context.Context, s *sessions, env *tasks.Env) (v1.Image, error) {
	plat, _ := parsePlatform(b.platform())
	base, err := b.baseImage(ctx, s, plat)
	if err != nil {
		return nil, err
	}
	layerType, err := layerMediaType(base)
	if err != nil {
		return nil, fmt.Errorf("base %q: %w", b.Base, err)
	}
	adds := make([]mutate.Addendum, 0, len(b.Layers))
	for _, m := range b.Layers {
		spec, _ := parseLayerSpec(m)
		spec.dir = env.Dir
		add, err := layerAddendum(ctx, spec, layerType)
		if err != nil {
			return nil, err
		}
		adds = append(adds, add)
	}
	img, err := mutate.Append(base, adds...)
	if err != nil {
		return nil, fmt.Errorf("build: %w", err)
	}
	return b.configure(img, plat)
}

// layerAddendum builds the layer of one layers element with its history entry.
func layerAddendum(ctx context.Context, spec layerSpec, mt types.MediaType) (mutate.Addendum, error) {
	history := v1.History{Created: v1.Time{Time: epoch}}
	if spec.tarball != "" {
		layer, err := tarballLayer(spec.local(spec.tarball), mt)
		history.CreatedBy = "image_build: add tarball " + filepath.Base(spec.tarball)
		return mutate.Addendum{Layer: layer, History: history}, err
	}
	data, err := buildLayer(ctx, spec)
	if err != nil {
		return mutate.Addendum{}, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(data)), nil
	}, tarball.WithMediaType(mt))
	if err != nil {
		return mutate.Addendum{}, fmt.Errorf("layer %q: %w", spec.source, err)
	}
	history.CreatedBy = "image_build: copy to " + spec.destination
	return mutate.Addendum{Layer: layer, History: history}, nil
}

// baseImage is the empty image for scratch, else base resolved for plat.
func (b *Build) baseImage(ctx context.Context, s *sessions, plat v1.Platform) (v1.Image, error) {
	if b.Base == "" || b.Base == "scratch" {
		return empty.Image, nil
	}
	ref, _ := parseImageRef(b.Base, nameOptions(b.Insecure))
	s.pull(ref.ref.Context())
	img, _, err := fetchImage(ctx, s, ref.ref, plat)
	if err != nil {
		return nil, fmt.Errorf("base %q: %w", b.Base, err)
	}
	return img, nil
}

// layerMediaType matches new layers to the base's manifest format.
func layerMediaType(base v1.Image) (types.MediaType, error) {
	mt, err := base.MediaType()
	if err != nil {
		return "", err
	}
	if mt == types.OCIManifestSchema1 {
		return types.OCILayer, nil
	}
	return types.DockerLayer, nil
}

// configure applies the config attributes, the platform and the fixed
// creation time.
func (b *Build) configure(img v1.Image, plat v1.Platform) (v1.Image, error) {
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("build: config: %w", err)
	}
	cf = cf.DeepCopy()
	cf.Created = v1.Time{Time: epoch}
	if b.Base == "" || b.Base == "scratch" {
		cf.OS, cf.Architecture, cf.Variant = plat.OS, plat.Architecture, plat.Variant
	} else if have := cf.Platform(); have != nil && have.Architecture != "" && !have.Satisfies(plat) {
		return nil, fmt.Errorf("base %q is built for %s, not %s", b.Base, have, plat)
	}
	c := &cf.Config
	if b.Entrypoint != nil {
		c.Entrypoint = b.Entrypoint
		if b.Cmd == nil {
			c.Cmd = nil // as in a Dockerfile: a new ENTRYPOINT drops the base's CMD
		}
	}
	if b.Cmd != nil {
		c.Cmd = b.Cmd
	}
	if b.Workdir != "" {
		c.WorkingDir = b.Workdir
	}
	c.Env = mergeEnv(c.Env, b.Env)
	for _, p := range b.ExposedPorts {
		spec, _ := portSpec(p)
		if c.ExposedPorts == nil {
			c.ExposedPorts = map[string]struct{}{}
		}
		c.ExposedPorts[spec] = struct{}{}
	}
	for k, v := range b.Labels {
		if c.Labels == nil {
			c.Labels = map[string]string{}
		}
		c.Labels[k] = v
	}
	return mutate.ConfigFile(img, cf)
}

// mergeEnv overrides base's KEY=VALUE entries with add, keeping base's order
// and appending new keys sorted.
func mergeEnv(base []string, add map[string]string) []string {
	if len(add) == 0 {
		return base
	}
	out := make([]string, 0, len(base)+len(add))
	done := map[string]bool{}
	for _, kv := range base {
		k, _, _ := strings.Cut(kv, "=")
		if v, ok := add[k]; ok {
			kv, done[k] = k+"="+v, true
		}
		out = append(out, kv)
	}
	keys := make([]string, 0, len(add))
	for k := range add {
		if !done[k] {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		out = append(out, k+"="+add[k])
	}
	return out
}

// pushImage pushes img to tag unless the registry already has it there.
func pushImage(ctx context.Context, s *sessions, tag name.Tag, img v1.Image, digest v1.Hash, env *tasks.Env) error {
	reg := tag.Context().Registry
	ctx = forWrite(ctx)
	sess, err := s.get(reg)
	if err != nil {
		return fmt.Errorf("push %q: registry %q: %w", tag, reg.RegistryStr(), describe(err))
	}
	if got, err := sess.puller.Head(ctx, tag); err == nil && got.Digest == digest {
		fmt.Fprintf(env.Stdout, "%s: already present\n", pinned(tag.Context(), digest))
		return nil
	} else if err != nil && !isNotFound(err) {
		return fmt.Errorf("push %q: registry %q: %w", tag, reg.RegistryStr(), describe(err))
	}
	if err := sess.pusher.Push(ctx, tag, img); err != nil {
		return fmt.Errorf("push %q: %w", tag, describe(err))
	}
	fmt.Fprintf(env.Stdout, "pushed %s\n", pinned(tag.Context(), digest))
	return nil
}
