package image

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/flowdev/flow/tasks"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/zclconf/go-cty/cty"
)

// Build assembles an image from a base and local files, reproducibly, and
// pushes it, writes it to a tarball, or both. It is the hcl config struct of
// the image_build task type.
type Build struct {
	Base         string              `hcl:"base,optional" doc:"Base image reference, or scratch (the default) for an empty image."`
	Layers       []map[string]string `hcl:"layers,optional" doc:"One layer per element: source (a local file or directory, relative to where flow runs), destination (absolute path in the image; a trailing / puts the source inside it) and optional mode (octal, e.g. \"0755\", for the files); or tarball alone: a tar or gzipped tar file taken as the layer as it is (a root file system with its owners, modes and links)."`
	Entrypoint   []string            `hcl:"entrypoint,optional" doc:"Entrypoint; unset keeps the base's, and setting it clears the base's cmd unless cmd is set too."`
	Cmd          []string            `hcl:"cmd,optional" doc:"Default arguments; unset keeps the base's."`
	Env          map[string]string   `hcl:"env,optional" doc:"Environment variables added to (or overriding) the base's."`
	Workdir      string              `hcl:"workdir,optional" doc:"Working directory; unset keeps the base's."`
	ExposedPorts []string            `hcl:"exposed_ports,optional" doc:"Ports to declare, e.g. [\"8080\", \"53/udp\"]; tcp when no protocol is given."`
	Labels       map[string]string   `hcl:"labels,optional" doc:"Labels added to (or overriding) the base's."`
	Platform     string              `hcl:"platform,optional" doc:"Platform to build for, os/arch[/variant]; default linux/amd64. Picks the base from a multi-platform index."`
	Push         string              `hcl:"push,optional" doc:"Tag reference to push the image to, e.g. localhost:32000/app:v1. At least one of push and tarball is required."`
	Tarball      string              `hcl:"tarball,optional" doc:"Local path of a docker-archive tarball to write the image to."`
	Tag          string              `hcl:"tag,optional" doc:"Name recorded in the tarball (what microk8s images import or ctr images import call it); defaults to push. Required for a tarball without push."`
	Insecure     bool                `hcl:"insecure,optional" doc:"Allow plain HTTP to the registries of base and push (https is still tried first)."`
}

const defaultPlatform = "linux/amd64"

func buildType() tasks.Type {
	return tasks.Type{
		Name:    "image_build",
		Summary: "Build a container image from a base and local files, reproducibly",
		Doc: `Builds an image without a container engine: the base (or an empty image), one layer per
element of layers, and the config changes given. The build is reproducible: every file is
stamped 1970-01-01 and owned by 0:0, entries are sorted, modes are normalised (0755 for
directories and executables, 0644 for other files, unless mode is given), and the config's
created time is fixed, so the same base and the same files give the same digest on any
machine. A base given by tag is resolved when the task runs, so a moved tag gives a new
digest.

The image is pushed to push and/or written to tarball as a docker archive. When the
registry already holds that digest under the tag, or the tarball already holds this image
under its name, the task reports "already present" and writes nothing.`,
		New: func() tasks.Task { return &Build{} },
		Outputs: []tasks.Output{
			{Name: "digest", Type: cty.String, Doc: "Manifest digest of the image, sha256:…"},
			{Name: "reference", Type: cty.String, Doc: "The pushed image pinned by digest (repo@sha256:…); without push, the tag recorded in the tarball."},
			{Name: "tarball", Type: cty.String, Doc: "Absolute path of the tarball written, or \"\" without tarball."},
		},
		Undo: "Not undone: the built image stays where it was written or pushed.",
		Example: `task "image_build" "agent" {
  base = "localhost:32000/library/alpine:3.21"
  layers = [
    { source = "bin/agent", destination = "/usr/local/bin/agent", mode = "0755" },
    { source = "config/", destination = "/etc/agent/" },
  ]
  entrypoint    = ["/usr/local/bin/agent"]
  cmd           = ["--config", "/etc/agent/agent.yaml"]
  env           = { AGENT_LOG = "info" }
  workdir       = "/var/lib/agent"
  exposed_ports = ["8080"]
  labels        = { "org.opencontainers.image.source" = "https://example.com/agent" }
  push          = "localhost:32000/agent:dev"
  tarball       = ".lab/agent.tar"
  insecure      = true
}`,
	}
}

// Validate checks every attribute without touching files or registries.
func (b *Build) Validate() error {
	opts := nameOptions(b.Insecure)
	if b.Base != "" && b.Base != "scratch" {
		if _, err := parseImageRef(b.Base, opts); err != nil {
			return &tasks.AttrError{Attr: "base", Err: err}
		}
	}
	for i, l := range b.Layers {
		if _, err := parseLayerSpec(l); err != nil {
			return &tasks.AttrError{Attr: "layers", Err: fmt.Errorf("element %d: %w", i, err)}
		}
	}
	for k := range b.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return &tasks.AttrError{Attr: "env", Err: errors.New("variable names must be non-empty and contain no '=' or NUL")}
		}
	}
	if b.Workdir != "" && !strings.HasPrefix(b.Workdir, "/") {
		return &tasks.AttrError{Attr: "workdir", Err: fmt.Errorf("%q must be an absolute path", b.Workdir)}
	}
	for _, p := range b.ExposedPorts {
		if _, err := portSpec(p); err != nil {
			return &tasks.AttrError{Attr: "exposed_ports", Err: err}
		}
	}
	if _, err := parsePlatform(b.platform()); err != nil {
		return &tasks.AttrError{Attr: "platform", Err: err}
	}
	return b.validateOutputs(opts)
}

// validateOutputs checks push, tarball and tag.
func (b *Build) validateOutputs(opts []name.Option) error {
	if b.Push == "" && b.Tarball == "" {
		return &tasks.AttrError{Attr: "push", Err: errors.New("set push, tarball or both")}
	}
	if b.Push != "" {
		if _, err := name.NewTag(b.Push, opts...); err != nil {
			return &tasks.AttrError{Attr: "push", Err: fmt.Errorf("want a tag reference: %w", err)}
		}
	}
	if b.Tag != "" {
		if _, err := name.NewTag(b.Tag, opts...); err != nil {
			return &tasks.AttrError{Attr: "tag", Err: err}
		}
	}
	if b.Tarball != "" && b.Push == "" && b.Tag == "" {
		return &tasks.AttrError{Attr: "tag", Err: errors.New("a tarball without push needs a tag to record as its name")}
	}
	return nil
}

func (b *Build) platform() string {
	if b.Platform == "" {
		return defaultPlatform
	}
	return b.Platform
}

// portSpec normalises "8080" to "8080/tcp" and checks number and protocol.
func portSpec(p string) (string, error) {
	num, proto, hasProto := strings.Cut(p, "/")
	if !hasProto {
		proto = "tcp"
	}
	n, err := strconv.Atoi(num)
	if err != nil || n < 1 || n > 65535 {
		return "", fmt.Errorf("port %q: want a number from 1 to 65535", p)
	}
	switch proto {
	case "tcp", "udp", "sctp":
	default:
		return "", fmt.Errorf("port %q: protocol must be tcp, udp or sctp", p)
	}
	return strconv.Itoa(n) + "/" + proto, nil
}

var _ tasks.Task = (*Build)(nil)
