package image

import (
	"fmt"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// nameOptions are how every reference of a task is parsed: plain HTTP is allowed
// only when the task says insecure (loopback and private addresses are always
// allowed it by go-containerregistry).
func nameOptions(insecure bool) []name.Option {
	if insecure {
		return []name.Option{name.Insecure}
	}
	return nil
}

// imageRef is a reference as a user writes it: "repo:tag", "repo@digest" or
// "repo:tag@digest". ref is what to fetch (the digest when there is one); tag is
// the tag written, "" when none was.
type imageRef struct {
	ref name.Reference
	tag string
}

func parseImageRef(s string, opts []name.Option) (imageRef, error) {
	if base, _, pinned := strings.Cut(s, "@"); pinned {
		d, err := name.NewDigest(s, opts...)
		if err != nil {
			return imageRef{}, err
		}
		var tag string
		if t, err := name.NewTag(base, append(opts, name.StrictValidation)...); err == nil {
			tag = t.TagStr()
		}
		return imageRef{ref: d, tag: tag}, nil
	}
	t, err := name.NewTag(s, opts...)
	if err != nil {
		return imageRef{}, err
	}
	return imageRef{ref: t, tag: t.TagStr()}, nil
}

// tagged returns the tag reference of r, if it has a tag.
func (r imageRef) tagged() (name.Tag, bool) {
	if r.tag == "" {
		return name.Tag{}, false
	}
	return r.ref.Context().Tag(r.tag), true
}

// pinned renders repo@digest, the form outputs publish.
func pinned(repo name.Repository, digest v1.Hash) string {
	return repo.Name() + "@" + digest.String()
}

// parsePlatforms parses "os/arch[/variant]" strings; each needs os and arch.
func parsePlatforms(specs []string) ([]v1.Platform, error) {
	out := make([]v1.Platform, 0, len(specs))
	for _, s := range specs {
		p, err := parsePlatform(s)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

func parsePlatform(s string) (v1.Platform, error) {
	p, err := v1.ParsePlatform(s)
	if err != nil {
		return v1.Platform{}, fmt.Errorf("platform %q: %w", s, err)
	}
	if p.OS == "" || p.Architecture == "" {
		return v1.Platform{}, fmt.Errorf("platform %q: want os/arch[/variant], e.g. linux/amd64", s)
	}
	return *p, nil
}

// matchesAny reports whether a manifest built for have suits one of want.
func matchesAny(have *v1.Platform, want []v1.Platform) bool {
	if have == nil {
		return false
	}
	for _, w := range want {
		if have.Satisfies(w) {
			return true
		}
	}
	return false
}

// pickManifest returns the descriptor in an index's manifest list built for
// want, the first one if several are.
func pickManifest(im *v1.IndexManifest, want v1.Platform) (v1.Descriptor, error) {
	var have []string
	for _, d := range im.Manifests {
		if matchesAny(d.Platform, []v1.Platform{want}) {
			return d, nil
		}
		if d.Platform != nil {
			have = append(have, d.Platform.String())
		}
	}
	return v1.Descriptor{}, fmt.Errorf("no manifest for %s (the index has %s)", want, strings.Join(have, ", "))
}
