package lxd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	lxdclient "github.com/canonical/lxd/client"
	"github.com/canonical/lxd/shared/api"
	"github.com/zclconf/go-cty/cty"

	"github.com/flowdev/flow/internal/ctxio"
	"github.com/flowdev/flow/internal/digestcache"
	"github.com/flowdev/flow/tasks"
)

// ImageImport uploads a local image into the server's image store under an
// alias. It is the hcl config struct of the lxd_image_import task type.
type ImageImport struct {
	Remote      map[string]string `hcl:"remote,optional" sensitive_keys:"trust_token" doc:"LXD server to use, as a map: address (https://HOST:PORT; empty = the local unix socket), socket, project, and for HTTPS the paths client_cert, client_key and server_cert, and trust_token (a single-use token of lxc config trust add, which makes the server trust client_cert and pins its certificate at server_cert on first contact; never recorded). Declare it once in locals and pass it to every task that uses it."`
	File        string            `hcl:"file,optional" doc:"Unified image tarball (metadata.yaml and rootfs/ in one file). Exactly one of file and metadata + rootfs is required."`
	Metadata    string            `hcl:"metadata,optional" doc:"Metadata tarball of a split image; needs rootfs."`
	Rootfs      string            `hcl:"rootfs,optional" doc:"Root file system of a split image (squashfs or tarball; .img or .qcow2 for a virtual machine); needs metadata."`
	Alias       string            `hcl:"alias" doc:"Alias the image gets, e.g. for lxd_launch's image."`
	Description string            `hcl:"image_description,optional" doc:"Description property of the uploaded image; without it, the one in the image's metadata.yaml."`
	Public      bool              `hcl:"public,optional" doc:"Make the image available to untrusted clients."`
	Recreate    bool              `hcl:"recreate,optional" doc:"Move an alias that points at another image to this one instead of failing."`
}

func imageImportType() tasks.Type {
	return tasks.Type{
		Name:    "lxd_image_import",
		Summary: "Upload a local LXD image file under an alias",
		Doc: `Computes the image's fingerprint locally, the way LXD does (the sha256 of the
unified tarball, or of the metadata tarball followed by the rootfs), so a re-run costs
no upload. When the alias already points at that fingerprint, the task changes nothing
and says "already present". When the image is in the store without the alias, only
the alias is created. When the alias points at another image, the task fails naming
both fingerprints, unless recreate is true: then the image is uploaded if needed and
the alias moved to it (the old image stays). image_description and public apply to
an upload only.`,
		New: func() tasks.Task { return &ImageImport{} },
		Outputs: []tasks.Output{
			{Name: "fingerprint", Type: cty.String, Doc: "The image's full sha256 fingerprint."},
			{Name: "alias", Type: cty.String, Doc: "The alias, for lxd_launch's image."},
			{Name: "size", Type: cty.Number, Doc: "The image's size in bytes, as LXD reports it."},
		},
		Undo: "flow destroy deletes the image the alias points at, with the alias; an image that other aliases also name is kept and only the alias goes.",
		Example: `task "lxd_image_import" "busybox" {
  remote = local.lxd
  file   = ".lab/busybox.tar.gz"
  alias  = "busybox"
}`,
	}
}

// Validate checks that exactly one image form is given and the alias is set.
func (i *ImageImport) Validate() error {
	if err := validateRemote(i.Remote); err != nil {
		return &tasks.AttrError{Attr: "remote", Err: err}
	}
	split := i.Metadata != "" || i.Rootfs != ""
	switch {
	case i.File != "" && split:
		return &tasks.AttrError{Attr: "file", Err: errors.New("file and metadata + rootfs are mutually exclusive; set only one")}
	case i.File == "" && !split:
		return &tasks.AttrError{Attr: "file", Err: errors.New("one of file or metadata + rootfs is required")}
	case split && i.Metadata == "":
		return &tasks.AttrError{Attr: "metadata", Err: errors.New("rootfs needs metadata")}
	case split && i.Rootfs == "":
		return &tasks.AttrError{Attr: "rootfs", Err: errors.New("metadata needs rootfs")}
	case i.Alias == "":
		return &tasks.AttrError{Attr: "alias", Err: errors.New("must not be empty")}
	}
	return nil
}

// Run runs run, again while it fails with a transient fault (see retry).
func (i *ImageImport) Run(ctx context.Context, env *tasks.Env) (tasks.Outputs, error) {
	return retry(ctx, env, i.run)
}

// run uploads the image unless it is there and points the alias at it.
func (i *ImageImport) run(ctx context.Context, env *tasks.Env) (tasks.Outputs, error) {
	cp := *i
	cp.Remote = remoteIn(env, i.Remote)
	cp.File, cp.Metadata, cp.Rootfs = env.InDir(i.File), env.InDir(i.Metadata), env.InDir(i.Rootfs)
	i = &cp // its local paths taken from env's directory
	fingerprint, err := i.fingerprint(ctx)
	if err != nil {
		return nil, fmt.Errorf("import image %q: %w", i.Alias, err)
	}
	srv, err := connect(ctx, i.Remote)
	if err != nil {
		return nil, fmt.Errorf("import image %q: %w", i.Alias, err)
	}
	if err := i.ensure(ctx, srv, env, fingerprint); err != nil {
		return nil, fmt.Errorf("import image %q: %w", i.Alias, err)
	}
	img, _, err := srv.GetImage(fingerprint)
	if err != nil {
		return nil, fmt.Errorf("import image %q: get image %s: %w", i.Alias, shortFingerprint(fingerprint), err)
	}
	return tasks.Outputs{
		"fingerprint": cty.StringVal(fingerprint),
		"alias":       cty.StringVal(i.Alias),
		"size":        cty.NumberIntVal(img.Size),
	}, nil
}

// ensure makes the alias point at an image with fingerprint, uploading the
// image only when the store lacks it.
func (i *ImageImport) ensure(ctx context.Context, srv lxdclient.InstanceServer, env *tasks.Env, fingerprint string) error {
	alias, etag, err := srv.GetImageAlias(i.Alias)
	if err != nil && !isNotFound(err) {
		return fmt.Errorf("get alias: %w", err)
	}
	exists := err == nil
	switch {
	case exists && alias.Target == fingerprint:
		alreadyPresent(env, fmt.Sprintf("image %q (%s)", i.Alias, shortFingerprint(fingerprint)))
		return nil
	case exists && !i.Recreate:
		return fmt.Errorf("alias points at image %s, but the file's fingerprint is %s (set recreate = true to move the alias)", alias.Target, fingerprint)
	}
	if err := i.ensureImage(ctx, srv, env, fingerprint); err != nil {
		return err
	}
	if exists {
		if err := srv.UpdateImageAlias(i.Alias, api.ImageAliasesEntryPut{Target: fingerprint, Description: alias.Description}, etag); err != nil {
			return fmt.Errorf("move alias from %s to %s: %w", shortFingerprint(alias.Target), shortFingerprint(fingerprint), err)
		}
		fmt.Fprintf(env.Stdout, "alias %q moved from %s to %s\n", i.Alias, shortFingerprint(alias.Target), shortFingerprint(fingerprint))
		return nil
	}
	entry := api.ImageAliasesPost{ImageAliasesEntry: api.ImageAliasesEntry{Name: i.Alias, Target: fingerprint}}
	if err := srv.CreateImageAlias(entry); err != nil {
		return fmt.Errorf("create alias: %w", err)
	}
	fmt.Fprintf(env.Stdout, "alias %q points at %s\n", i.Alias, shortFingerprint(fingerprint))
	return nil
}

// ensureImage uploads the image unless the store has it already.
func (i *ImageImport) ensureImage(ctx context.Context, srv lxdclient.InstanceServer, env *tasks.Env, fingerprint string) error {
	_, _, err := srv.GetImage(fingerprint)
	if err == nil {
		fmt.Fprintf(env.Stdout, "image %s already in the store\n", shortFingerprint(fingerprint))
		return nil
	}
	if !isNotFound(err) {
		return fmt.Errorf("get image %s: %w", shortFingerprint(fingerprint), err)
	}
	fmt.Fprintf(env.Stdout, "uploading %s\n", strings.Join(i.files(), " + "))
	got, err := i.upload(ctx, srv)
	if err != nil && ctx.Err() == nil {
		// An upload left running by a killed run may have stored the same image
		// meanwhile; then ours is refused, and the image is there all the same.
		if _, _, gerr := srv.GetImage(fingerprint); gerr == nil {
			fmt.Fprintf(env.Stdout, "image %s stored by an earlier attempt\n", shortFingerprint(fingerprint))
			return nil
		}
	}
	if err != nil {
		return fmt.Errorf("upload: %w", err)
	}
	if got != fingerprint {
		return fmt.Errorf("upload: LXD computed fingerprint %s, the file's is %s", got, fingerprint)
	}
	fmt.Fprintf(env.Stdout, "image %s uploaded\n", shortFingerprint(fingerprint))
	return nil
}

// upload sends the files with CreateImage and returns the fingerprint LXD
// computed. The client does not bind the upload request to a context, so the
// files are read through ctxio.Reader: a cancelled ctx fails the next read.
func (i *ImageImport) upload(ctx context.Context, srv lxdclient.InstanceServer) (string, error) {
	files := i.files()
	args := &lxdclient.ImageCreateArgs{}
	readers := []*io.Reader{&args.MetaFile, &args.RootfsFile}
	names := []*string{&args.MetaName, &args.RootfsName}
	for n, path := range files {
		f, err := os.Open(path)
		if err != nil {
			return "", err
		}
		defer f.Close()
		*readers[n] = ctxio.Reader(ctx, f)
		*names[n] = filepath.Base(path)
	}
	if ext := filepath.Ext(i.Rootfs); ext == ".img" || ext == ".qcow2" {
		args.Type = "virtual-machine"
	}
	req := api.ImagesPost{ImagePut: api.ImagePut{Public: i.Public}}
	if i.Description != "" {
		req.Properties = map[string]string{"description": i.Description}
	}
	op, err := srv.CreateImage(req, args)
	if err != nil {
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		return "", err
	}
	if err := waitOp(ctx, i.Remote, op); err != nil {
		return "", err
	}
	got, _ := op.Get().Metadata["fingerprint"].(string)
	return got, nil
}

// fingerprint is LXD's: the sha256 of the unified file, or of metadata
// followed by rootfs.
// fingerprint is the files' sha256, read again only when a file changed since the last
// run on this machine (internal/digestcache): the member image is 800 MB.
func (i *ImageImport) fingerprint(ctx context.Context) (string, error) {
	return digestcache.Sum(ctx, i.files()...)
}

func (i *ImageImport) files() []string {
	if i.File != "" {
		return []string{i.File}
	}
	return []string{i.Metadata, i.Rootfs}
}

var _ tasks.Task = (*ImageImport)(nil)
