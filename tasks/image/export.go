package image

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/flowdev/flow/tasks"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/zclconf/go-cty/cty"
)

// Export writes one image from a registry to a local docker-archive tarball.
// It is the hcl config struct of the image_export task type.
type Export struct {
	Image    string `hcl:"image" doc:"Image reference: repo:tag, repo@sha256:… or repo:tag@sha256:… (pinned, and named by the tag in the tarball)."`
	Path     string `hcl:"path" doc:"Local path of the tarball; parent directories are created."`
	Platform string `hcl:"platform,optional" doc:"Platform to pick from a multi-platform index, os/arch[/variant]; default linux/amd64."`
	Insecure bool   `hcl:"insecure,optional" doc:"Allow plain HTTP to the registry (https is still tried first)."`
}

func exportType() tasks.Type {
	return tasks.Type{
		Name:    "image_export",
		Summary: "Write an image from a registry to a docker-archive tarball",
		Doc: `Pulls image (for platform, when it is a multi-platform index) and writes it to path as a
docker archive, the format microk8s images import, ctr images import and docker load
accept. The archive records the image under its tag; an image given only by digest is
written without a name. The file is written to a temporary file and renamed into place,
mode 0644, so it is never seen half-written.

When path already holds the same image under the same name (same config digest, the
image ID), the task reports "already present" and writes nothing.`,
		New: func() tasks.Task { return &Export{} },
		Outputs: []tasks.Output{
			{Name: "path", Type: cty.String, Doc: "Absolute path of the tarball."},
			{Name: "digest", Type: cty.String, Doc: "Manifest digest of the exported image in the registry (for an index, of the platform's manifest), sha256:…"},
		},
		Undo: "Not undone: the exported file stays.",
		Example: `task "image_export" "scheduler" {
  image    = "localhost:32000/karmada/karmada-scheduler:v1.13.0"
  path     = ".lab/images/karmada-scheduler.tar"
  platform = "linux/amd64"
  insecure = true
}`,
	}
}

// Validate checks the reference, the path and the platform.
func (e *Export) Validate() error {
	if _, err := parseImageRef(e.Image, nameOptions(e.Insecure)); err != nil {
		return &tasks.AttrError{Attr: "image", Err: err}
	}
	if strings.TrimSpace(e.Path) == "" || strings.HasSuffix(e.Path, "/") {
		return &tasks.AttrError{Attr: "path", Err: errors.New("must name a file")}
	}
	if _, err := parsePlatform(e.platform()); err != nil {
		return &tasks.AttrError{Attr: "platform", Err: err}
	}
	return nil
}

func (e *Export) platform() string {
	if e.Platform == "" {
		return defaultPlatform
	}
	return e.Platform
}

// Run fetches the image's manifest and config, and writes the tarball unless
// path already holds the image.
func (e *Export) Run(ctx context.Context, env *tasks.Env) (tasks.Outputs, error) {
	ref, err := parseImageRef(e.Image, nameOptions(e.Insecure))
	if err != nil {
		return nil, err
	}
	plat, _ := parsePlatform(e.platform())
	abs, err := filepath.Abs(env.InDir(e.Path))
	if err != nil {
		return nil, fmt.Errorf("export %q: %w", e.Image, err)
	}
	s := newSessions(ctx, env.Stderr)
	s.pull(ref.ref.Context())
	img, digest, err := fetchImage(ctx, s, ref.ref, plat)
	if err != nil {
		return nil, fmt.Errorf("export %q: %w", e.Image, err)
	}
	var named name.Reference = ref.ref
	if tag, ok := ref.tagged(); ok {
		named = tag
	}
	if err := saveTarball(abs, named, img, env); err != nil {
		return nil, fmt.Errorf("export %q: %w", e.Image, err)
	}
	return tasks.Outputs{"path": cty.StringVal(abs), "digest": cty.StringVal(digest.String())}, nil
}

var _ tasks.Task = (*Export)(nil)
