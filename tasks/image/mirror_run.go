package image

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/flowdev/flow/tasks"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/zclconf/go-cty/cty"
)

// Run copies every image that the target lacks, parallelism at a time, and
// publishes where each one is. An image that fails does not stop the others.
func (m *Mirror) Run(ctx context.Context, env *tasks.Env) (tasks.Outputs, error) {
	pairs, err := m.pairs()
	if err != nil {
		return nil, err
	}
	parallelism := cmp.Or(m.Parallelism, defaultParallelism)
	run := &mirrorRun{sessions: newSessions(ctx, env.Stderr), platforms: m.platforms(), homes: newBlobHomes(), env: env,
		copySlots: make(chan struct{}, parallelism)}
	for _, p := range pairs {
		run.sessions.pull(p.src.ref.Context())
		run.sessions.push(p.target)
	}
	results := run.all(ctx, pairs, max(parallelism, checkParallelism))
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("mirror stopped: %w", err)
	}
	images, copied, errs := tally(pairs, results)
	switch {
	case len(errs) == 1 && len(pairs) == 1:
		return nil, errs[0]
	case len(errs) > 0:
		return nil, fmt.Errorf("mirror: %d of %d images failed: %w", len(errs), len(pairs), errors.Join(errs...))
	}
	fmt.Fprintf(env.Stdout, "%d images in %s: %d copied, %d already present\n", len(pairs), m.Registry, copied, len(pairs)-copied)
	return tasks.Outputs{"images": cty.MapVal(images)}, nil
}

// tally collects the pinned targets, how many images were copied, and the
// errors, in the order of pairs.
func tally(pairs []mirrorPair, results []mirrorResult) (images map[string]cty.Value, copied int, errs []error) {
	images = make(map[string]cty.Value, len(pairs))
	for i, r := range results {
		if r.err != nil {
			errs = append(errs, r.err)
			continue
		}
		images[pairs[i].key] = cty.StringVal(pinned(pairs[i].target, r.digest))
		if r.copied {
			copied++
		}
	}
	return images, copied, errs
}

// checkParallelism is how many images are checked (two HEADs) at a time; at
// most parallelism of them are copied at a time. Checks are small requests
// that spend their time waiting, so a re-run of a large set is bounded by
// round trips, not by the registry's bandwidth.
const checkParallelism = 16

// mirrorRun is the state of one Run shared by its workers.
type mirrorRun struct {
	sessions  *sessions
	platforms []v1.Platform
	homes     *blobHomes
	env       *tasks.Env
	copySlots chan struct{} // one token per image being copied
}

type mirrorResult struct {
	digest v1.Hash
	copied bool
	err    error
}

// all mirrors pairs with n workers; results are in the order of pairs.
func (r *mirrorRun) all(ctx context.Context, pairs []mirrorPair, n int) []mirrorResult {
	results := make([]mirrorResult, len(pairs))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(n, len(pairs)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				results[i] = r.one(ctx, pairs[i])
			}
		}()
	}
	for i := range pairs {
		if ctx.Err() != nil {
			results[i].err = ctx.Err()
			continue
		}
		next <- i
	}
	close(next)
	wg.Wait()
	return results
}

// one mirrors a single image and reports it on stdout. A copy cut by a
// connection the registry dropped (it restarted) starts over, within the task's
// transient bound: the blobs already there are skipped, a cut upload begins anew.
func (r *mirrorRun) one(ctx context.Context, p mirrorPair) mirrorResult {
	start := time.Now()
	type mirrored struct {
		digest v1.Hash
		copied bool
	}
	res, err := tasks.RetryTransient(ctx, r.env, droppedConnection, func() (mirrored, error) {
		digest, copied, err := r.mirror(ctx, p)
		return mirrored{digest, copied}, err
	})
	digest, copied := res.digest, res.copied
	if err != nil {
		return mirrorResult{err: fmt.Errorf("mirror %q: %w", p.key, err)}
	}
	if copied {
		fmt.Fprintf(r.env.Stdout, "%s -> %s: copied in %s\n", p.key, pinned(p.target, digest), time.Since(start).Round(time.Millisecond))
	} else {
		fmt.Fprintf(r.env.Stdout, "%s -> %s: already present\n", p.key, pinned(p.target, digest))
	}
	return mirrorResult{digest: digest, copied: copied}
}

// droppedConnection classifies the faults worth copying an image again for: a
// connection that was reset or closed mid-request. A refused one is not: the
// transport has already waited for the registry (retryTransport), and a session
// that could not connect keeps its error.
func droppedConnection(err error) string {
	switch f := tasks.TransientFault(err); f {
	case "connection refused", "socket missing":
		return ""
	default:
		return f
	}
}

// mirror looks up the digest the target should have, asks the target for it
// (one HEAD) and copies only when the answer differs.
func (r *mirrorRun) mirror(ctx context.Context, p mirrorPair) (v1.Hash, bool, error) {
	srcReg := p.src.ref.Context().Registry
	src, err := r.sessions.get(srcReg)
	if err != nil {
		return v1.Hash{}, false, fmt.Errorf("source registry %q: %w", srcReg.RegistryStr(), describe(err))
	}
	want, filtered, err := r.wanted(ctx, src, p)
	if err != nil {
		return v1.Hash{}, false, fmt.Errorf("source registry %q: %w", srcReg.RegistryStr(), err)
	}
	dstReg := p.target.Registry
	dst, err := r.sessions.get(dstReg)
	if err != nil {
		return v1.Hash{}, false, fmt.Errorf("target registry %q: %w", dstReg.RegistryStr(), describe(err))
	}
	target := targetRef(p, want)
	got, err := dst.puller.Head(forWrite(ctx), target)
	switch {
	case err == nil && got.Digest == want:
		return want, false, nil
	case err != nil && !isNotFound(err):
		return v1.Hash{}, false, fmt.Errorf("target registry %q: %w", dstReg.RegistryStr(), describe(err))
	}
	select {
	case r.copySlots <- struct{}{}:
		defer func() { <-r.copySlots }()
	case <-ctx.Done():
		return v1.Hash{}, false, ctx.Err()
	}
	if err := r.copy(ctx, src, dst, p, target, want, filtered); err != nil {
		return v1.Hash{}, false, fmt.Errorf("copy to %s: %w", target, describe(err))
	}
	return want, true, nil
}

// wanted returns the digest the target should hold: the source's, or with
// platforms set and an index at the source, that of the filtered index, which
// it also returns.
func (r *mirrorRun) wanted(ctx context.Context, src *session, p mirrorPair) (v1.Hash, v1.ImageIndex, error) {
	desc, err := src.puller.Head(ctx, p.src.ref)
	if err != nil && headFallback(err) {
		var full *remote.Descriptor
		if full, err = src.puller.Get(ctx, p.src.ref); err == nil {
			desc = &full.Descriptor
		}
	}
	if err != nil {
		return v1.Hash{}, nil, describe(err)
	}
	if len(r.platforms) == 0 || !desc.MediaType.IsIndex() {
		return desc.Digest, nil, nil
	}
	idx, err := r.filteredIndex(ctx, src, p.src.ref.Context().Digest(desc.Digest.String()))
	if err != nil {
		return v1.Hash{}, nil, err
	}
	digest, err := idx.Digest()
	return digest, idx, err
}

// filteredIndex fetches the index at ref and drops the manifests for other
// platforms; when all match it returns the index unchanged.
func (r *mirrorRun) filteredIndex(ctx context.Context, src *session, ref name.Digest) (v1.ImageIndex, error) {
	full, err := src.puller.Get(ctx, ref)
	if err != nil {
		return nil, describe(err)
	}
	idx, err := full.ImageIndex()
	if err != nil {
		return nil, err
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return nil, err
	}
	keep := 0
	for _, d := range im.Manifests {
		if matchesAny(d.Platform, r.platforms) {
			keep++
		}
	}
	if keep == 0 {
		return nil, fmt.Errorf("no manifest for platforms %v", r.platforms)
	}
	if keep == len(im.Manifests) {
		// Nothing to drop: the index as it is, not re-serialised, keeps the
		// source's digest, so references pinned to it resolve at the target.
		return idx, nil
	}
	return mutate.RemoveManifests(idx, func(d v1.Descriptor) bool { return !matchesAny(d.Platform, r.platforms) }), nil
}

// targetRef is where p goes: its tag, or when the source had none, the digest.
func targetRef(p mirrorPair, digest v1.Hash) name.Reference {
	if p.tag != "" {
		return p.target.Tag(p.tag)
	}
	return p.target.Digest(digest.String())
}

// copy pushes the source image (or the filtered index) to target; the pusher
// HEADs each blob first and sends only missing ones.
func (r *mirrorRun) copy(ctx context.Context, src, dst *session, p mirrorPair, target name.Reference, want v1.Hash, filtered v1.ImageIndex) error {
	pending := &pendingBlobs{}
	taggable, err := r.source(ctx, src, p, want, filtered, pending)
	if err != nil {
		return err
	}
	if err := dst.pusher.Push(forWrite(ctx), target, taggable); err != nil {
		return err
	}
	r.homes.settle(pending, p.target)
	return nil
}

// source returns what to push: the filtered index, or the source manifest
// fetched by the digest the HEAD saw (so a tag moving meanwhile cannot change
// what is pushed), with its images set up to mount shared layers.
func (r *mirrorRun) source(ctx context.Context, src *session, p mirrorPair, want v1.Hash, filtered v1.ImageIndex, pending *pendingBlobs) (remote.Taggable, error) {
	if filtered != nil {
		return r.homes.index(filtered, p.target, pending), nil
	}
	full, err := src.puller.Get(ctx, p.src.ref.Context().Digest(want.String()))
	if err != nil {
		return nil, err
	}
	switch {
	case full.MediaType.IsIndex():
		idx, err := full.ImageIndex()
		if err != nil {
			return nil, err
		}
		return r.homes.index(idx, p.target, pending), nil
	case full.MediaType.IsImage():
		img, err := full.Image()
		if err != nil {
			return nil, err
		}
		return r.homes.image(img, p.target, pending), nil
	}
	return full, nil
}
