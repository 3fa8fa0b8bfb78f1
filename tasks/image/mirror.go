package image

import (
	"errors"
	"fmt"
	"path"
	"sort"
	"strings"

	"github.com/flowdev/flow/tasks"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
)

// Mirror copies images from their registries into one target registry. It is
// the hcl config struct of the image_mirror task type.
type Mirror struct {
	Images      cty.Value `hcl:"images" doc:"The images to copy: a list of source references, named at the target by naming, or a map from source reference to target repository path (with an optional :tag) under registry and prefix."`
	Registry    string    `hcl:"registry" doc:"Target registry host and port, e.g. localhost:32000."`
	Naming      string    `hcl:"naming,optional" doc:"How a listed source is named at the target: keep (default) keeps the repository path, flatten keeps only its last component."`
	Prefix      string    `hcl:"prefix,optional" doc:"Repository path prefix under the target registry, e.g. karmada."`
	Platforms   []string  `hcl:"platforms,optional" doc:"Platforms to keep from multi-platform images, e.g. [\"linux/amd64\"]; empty copies the whole index."`
	Insecure    bool      `hcl:"insecure,optional" doc:"Allow plain HTTP to the registries (https is still tried first). Loopback and private addresses get this fallback without it."`
	Parallelism int       `hcl:"parallelism,optional" doc:"Images copied at the same time; default 4. Up to 16 (or parallelism, if larger) are checked at the same time."`
}

const defaultParallelism = 4

func mirrorType() tasks.Type {
	return tasks.Type{
		Name:    "image_mirror",
		Summary: "Copy container images into a registry, skipping those already there",
		Doc: `Copies every image in images from its registry to registry, without a container
engine. For each image it asks the source for the manifest digest (a HEAD) and the target
for the manifest under the target tag (a HEAD); when the two digests agree the image is
already present and nothing else is sent. Otherwise it copies the manifest and only the
blobs the target lacks, mounting blobs that an earlier image of the same run already put
into another repository of the target.

Listed sources are named by naming: "keep" maps docker.io/karmada/karmada-scheduler:v1.13.0
to REGISTRY/PREFIX/karmada/karmada-scheduler:v1.13.0, "flatten" to
REGISTRY/PREFIX/karmada-scheduler:v1.13.0, the layout karmadactl init
--private-image-registry=REGISTRY/PREFIX expects. A map names each target itself.

With platforms set, a multi-platform index is copied with only the matching manifests, so
its digest at the target differs from the source's (an index whose manifests all match is
copied as it is); single-platform images are copied as they are. Requests answered 408,
429 or 5xx are retried with exponential backoff, waiting at least as long as a Retry-After
header asks. A HEAD on the target still answered 500 after the retries is taken as
"absent", and the blob or manifest is written again: a registry killed while it wrote can
answer 500 for what it holds until then. Credentials come from the Docker config
(~/.docker/config.json and credential helpers). An image that fails does not stop the
others; the task fails after all have been tried, naming each failed image.`,
		New: func() tasks.Task { return &Mirror{} },
		Outputs: []tasks.Output{
			{Name: "images", Type: cty.Map(cty.String), Doc: "For each source as written in images, the target pinned by digest, e.g. localhost:32000/karmada/karmada-scheduler@sha256:…"},
		},
		Undo: "Not undone: the mirrored images stay in the target registry (destroying the registry removes them).",
		Example: `task "image_mirror" "karmada" {
  images = [
    "docker.io/karmada/karmada-controller-manager:v1.13.0",
    "docker.io/karmada/karmada-scheduler:v1.13.0",
    "registry.k8s.io/kube-apiserver:v1.31.3",
  ]
  registry    = "localhost:32000"
  prefix      = "karmada"
  naming      = "flatten"
  platforms   = ["linux/amd64"]
  insecure    = true
  parallelism = 4
}`,
	}
}

// mirrorPair is one image to copy.
type mirrorPair struct {
	key    string // the source as written: the key of the images output
	src    imageRef
	target name.Repository
	tag    string // tag at the target; "" pushes by digest
}

// Validate checks every attribute and that the sources and targets parse, and
// that no two sources land on the same target.
func (m *Mirror) Validate() error {
	_, err := m.pairs()
	return err
}

// pairs resolves images into what to copy where; it touches no network.
func (m *Mirror) pairs() ([]mirrorPair, error) {
	if _, err := name.NewRegistry(m.Registry, name.StrictValidation); err != nil || strings.Contains(m.Registry, "/") {
		return nil, &tasks.AttrError{Attr: "registry", Err: fmt.Errorf("%q is not a registry host[:port]; put repository paths in prefix", m.Registry)}
	}
	switch m.Naming {
	case "", "keep", "flatten":
	default:
		return nil, &tasks.AttrError{Attr: "naming", Err: fmt.Errorf("%q is not one of keep, flatten", m.Naming)}
	}
	if m.Prefix != "" && (strings.HasPrefix(m.Prefix, "/") || strings.HasSuffix(m.Prefix, "/")) {
		return nil, &tasks.AttrError{Attr: "prefix", Err: errors.New("must not start or end with /")}
	}
	if err := plainPath(m.Prefix); err != nil {
		return nil, &tasks.AttrError{Attr: "prefix", Err: err}
	}
	if m.Parallelism < 0 {
		return nil, &tasks.AttrError{Attr: "parallelism", Err: errors.New("must be at least 1")}
	}
	if _, err := parsePlatforms(m.Platforms); err != nil {
		return nil, &tasks.AttrError{Attr: "platforms", Err: err}
	}
	list, named, err := imagesValue(m.Images)
	if err != nil {
		return nil, &tasks.AttrError{Attr: "images", Err: err}
	}
	out := make([]mirrorPair, 0, len(list)+len(named))
	for _, src := range list {
		p, err := m.pair(src, "")
		if err != nil {
			return nil, &tasks.AttrError{Attr: "images", Err: err}
		}
		out = append(out, p)
	}
	for _, src := range sortedKeys(named) {
		p, err := m.pair(src, named[src])
		if err != nil {
			return nil, &tasks.AttrError{Attr: "images", Err: err}
		}
		out = append(out, p)
	}
	if err := distinctTargets(out); err != nil {
		return nil, &tasks.AttrError{Attr: "images", Err: err}
	}
	return out, nil
}

// pair resolves one source; target is the map value, "" for a listed source.
func (m *Mirror) pair(src, target string) (mirrorPair, error) {
	opts := nameOptions(m.Insecure)
	ref, err := parseImageRef(src, opts)
	if err != nil {
		return mirrorPair{}, fmt.Errorf("source %q: %w", src, err)
	}
	p := mirrorPair{key: src, src: ref, tag: ref.tag}
	repoPath := ref.ref.Context().RepositoryStr()
	if m.Naming == "flatten" {
		repoPath = path.Base(repoPath)
	}
	if target != "" {
		repoPath = target
		if i := strings.LastIndex(target, ":"); i > strings.LastIndex(target, "/") {
			repoPath, p.tag = target[:i], target[i+1:]
		}
	}
	if err := plainPath(repoPath); err != nil {
		return mirrorPair{}, fmt.Errorf("target of %q: %w", src, err)
	}
	full := path.Join(m.Registry, m.Prefix, repoPath)
	if p.target, err = name.NewRepository(full, opts...); err != nil {
		return mirrorPair{}, fmt.Errorf("target of %q: %w", src, err)
	}
	if p.tag != "" {
		if _, err := name.NewTag(full+":"+p.tag, opts...); err != nil {
			return mirrorPair{}, fmt.Errorf("target of %q: %w", src, err)
		}
	}
	return p, nil
}

// plainPath rejects "." and ".." elements in a repository path: path.Join
// would clean them away together with the registry before them, sending the
// image to Docker Hub.
func plainPath(p string) error {
	for _, e := range strings.Split(p, "/") {
		if e == "." || e == ".." {
			return fmt.Errorf("repository path %q must not contain \".\" or \"..\" elements", p)
		}
	}
	return nil
}

// imagesValue reads the images attribute: a list (or set or tuple) of source
// references, or a map (or object) from source reference to target path.
func imagesValue(v cty.Value) (list []string, named map[string]string, err error) {
	if v == cty.NilVal || v.IsNull() {
		return nil, nil, errors.New("required: a list of source references or a map from source to target")
	}
	ty := v.Type()
	switch {
	case ty.IsListType() || ty.IsSetType() || ty.IsTupleType():
		l, err := convert.Convert(v, cty.List(cty.String))
		if err != nil {
			return nil, nil, fmt.Errorf("a list must hold strings: %w", err)
		}
		for _, e := range l.AsValueSlice() {
			if e.IsNull() || e.AsString() == "" {
				return nil, nil, errors.New("a source reference must not be empty")
			}
			list = append(list, e.AsString())
		}
	case ty.IsMapType() || ty.IsObjectType():
		mv, err := convert.Convert(v, cty.Map(cty.String))
		if err != nil {
			return nil, nil, fmt.Errorf("a map must hold strings: %w", err)
		}
		named = map[string]string{}
		for k, e := range mv.AsValueMap() {
			if e.IsNull() || e.AsString() == "" {
				return nil, nil, fmt.Errorf("target of %q must not be empty", k)
			}
			named[k] = e.AsString()
		}
	default:
		return nil, nil, fmt.Errorf("want a list of source references or a map from source to target, got %s", ty.FriendlyName())
	}
	if len(list)+len(named) == 0 {
		return nil, nil, errors.New("must name at least one image")
	}
	return list, named, nil
}

// distinctTargets rejects two sources landing on the same target reference,
// and the same source listed twice.
func distinctTargets(pairs []mirrorPair) error {
	seen := map[string]string{}
	keys := map[string]bool{}
	for _, p := range pairs {
		if keys[p.key] {
			return fmt.Errorf("source %q is listed twice", p.key)
		}
		keys[p.key] = true
		if p.tag == "" {
			continue // by digest: the same digest twice is the same image
		}
		t := p.target.Name() + ":" + p.tag
		if other, dup := seen[t]; dup {
			return fmt.Errorf("sources %q and %q both go to %s", other, p.key, t)
		}
		seen[t] = p.key
	}
	return nil
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// platforms returns the parsed platforms; Validate has checked them.
func (m *Mirror) platforms() []v1.Platform {
	p, _ := parsePlatforms(m.Platforms)
	return p
}

var _ tasks.Task = (*Mirror)(nil)
