package lxd

import (
	"cmp"
	"context"
	"errors"
	"fmt"

	lxdclient "github.com/canonical/lxd/client"
	"github.com/canonical/lxd/shared/api"
	"github.com/zclconf/go-cty/cty"

	"github.com/flowdev/flow/tasks"
)

// ImageCopy copies an image from one LXD server's store to another's, in push mode,
// under an alias. It is the hcl config struct of the lxd_image_copy task type.
type ImageCopy struct {
	Remote map[string]string `hcl:"remote,optional" sensitive_keys:"trust_token" doc:"LXD server to copy from, as a map: address (https://HOST:PORT; empty = the local unix socket), socket, project, and for HTTPS the paths client_cert, client_key and server_cert, and trust_token (a single-use token of lxc config trust add, which makes the server trust client_cert and pins its certificate at server_cert on first contact; never recorded). Declare it once in locals and pass it to every task that uses it."`
	To     map[string]string `hcl:"to" sensitive_keys:"trust_token" doc:"LXD server to copy to, a map as remote (its keys are the same)."`
	Image  string            `hcl:"image" doc:"Alias or fingerprint of the image in remote's store."`
	Alias  string            `hcl:"alias,optional" doc:"Alias the copy gets on to; default image when image is an alias."`
}

// made values say what a copy created on its target, for its undo.
const (
	madeImage = "image" // the image, with the alias
	madeAlias = "alias" // only the alias: the image was there
)

func imageCopyType() tasks.Type {
	return tasks.Type{
		Name:    "lxd_image_copy",
		Summary: "Copy an LXD image from one server to another under an alias",
		Doc: `Copies the image that image names on remote (default: the local daemon) to the
server to, in push mode: remote sends the image to to, so to need not reach remote
(the local daemon usually serves no HTTPS address). The copy gets alias on to.

When alias on to already points at the same image (same fingerprint), the task
changes nothing and says "already present"; when to has the image without the
alias, only the alias is created. An alias on to that points at another image fails
the task, naming both fingerprints. The output made says what the task created,
which is what its undo removes.`,
		New: func() tasks.Task { return &ImageCopy{} },
		Outputs: []tasks.Output{
			{Name: "fingerprint", Type: cty.String, Doc: "The image's full sha256 fingerprint."},
			{Name: "alias", Type: cty.String, Doc: "The alias on to, for lxd_launch's image."},
			{Name: "made", Type: cty.String, Doc: `What the task created on to: "image" (the image, with the alias), "alias" (only the alias) or "" (nothing).`},
		},
		Refresh: "the alias is on to and points at the copied image",
		Undo:    `flow destroy removes what the task created (its output made): the image it copied (kept, with only the alias removed, when other aliases name it too), or the alias it added. An image that was on to before stays. A run killed after the copy but before its checkpoint finds the image there when resumed, and records nothing made.`,
		Example: `task "lxd_image_copy" "member_on_b" {
  image = "flow-member"
  to    = local.host_b
}`,
	}
}

// Validate checks the remotes, the image and that an alias is known.
func (c *ImageCopy) Validate() error {
	if err := validateRemote(c.Remote); err != nil {
		return &tasks.AttrError{Attr: "remote", Err: err}
	}
	if err := validateRemote(c.To); err != nil {
		return &tasks.AttrError{Attr: "to", Err: err}
	}
	if c.Image == "" {
		return &tasks.AttrError{Attr: "image", Err: errors.New("must not be empty")}
	}
	if c.Alias == "" && (imageRef{name: c.Image}).isFingerprint() {
		return &tasks.AttrError{Attr: "alias", Err: fmt.Errorf("must be set when image is a fingerprint (%s)", c.Image)}
	}
	if sameServer(c.Remote, c.To) {
		return &tasks.AttrError{Attr: "to", Err: errors.New("names the same server as remote; a copy needs two servers")}
	}
	return nil
}

// sameServer reports whether two remote maps name one server and project.
func sameServer(a, b map[string]string) bool {
	return a["address"] == b["address"] && a["socket"] == b["socket"] && a["project"] == b["project"]
}

func (c *ImageCopy) alias() string { return cmp.Or(c.Alias, c.Image) }

// in returns c with its local paths taken from env's directory.
func (c *ImageCopy) in(env *tasks.Env) *ImageCopy {
	cp := *c
	cp.Remote, cp.To = remoteIn(env, c.Remote), remoteIn(env, c.To)
	return &cp
}

// Run runs run, again while it fails with a transient fault (see retry).
func (c *ImageCopy) Run(ctx context.Context, env *tasks.Env) (tasks.Outputs, error) {
	return retry(ctx, env, c.run)
}

func (c *ImageCopy) run(ctx context.Context, env *tasks.Env) (tasks.Outputs, error) {
	c = c.in(env)
	what := fmt.Sprintf("copy image %q to %s", c.Image, serverName(c.To))
	src, err := connect(ctx, c.Remote)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	dst, err := connect(ctx, c.To)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	fingerprint, err := resolveLocalImage(src, c.Image)
	if err != nil {
		return nil, fmt.Errorf("%s: on %s: %w", what, serverName(c.Remote), err)
	}
	made, err := c.ensure(ctx, env, src, dst, fingerprint)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return tasks.Outputs{
		"fingerprint": cty.StringVal(fingerprint),
		"alias":       cty.StringVal(c.alias()),
		"made":        cty.StringVal(made),
	}, nil
}

// ensure makes the alias on dst point at the image, copying the image when dst
// lacks it, and says what it created.
func (c *ImageCopy) ensure(ctx context.Context, env *tasks.Env, src, dst lxdclient.InstanceServer, fingerprint string) (string, error) {
	alias, _, err := dst.GetImageAlias(c.alias())
	switch {
	case err == nil && alias.Target == fingerprint:
		alreadyPresent(env, fmt.Sprintf("image %q (%s) on %s", c.alias(), shortFingerprint(fingerprint), serverName(c.To)))
		return "", nil
	case err == nil:
		return "", fmt.Errorf("alias %q there points at image %s, not %s", c.alias(), shortFingerprint(alias.Target), shortFingerprint(fingerprint))
	case !isNotFound(err):
		return "", fmt.Errorf("get alias %q: %w", c.alias(), err)
	}
	made := madeAlias
	if _, _, err := dst.GetImage(fingerprint); isNotFound(err) {
		if err := c.copy(ctx, env, src, dst, fingerprint); err != nil {
			return "", err
		}
		made = madeImage
	} else if err != nil {
		return "", fmt.Errorf("get image %s: %w", shortFingerprint(fingerprint), err)
	}
	entry := api.ImageAliasesPost{ImageAliasesEntry: api.ImageAliasesEntry{Name: c.alias(), Target: fingerprint}}
	if err := dst.CreateImageAlias(entry); err != nil {
		return "", fmt.Errorf("create alias %q: %w", c.alias(), err)
	}
	fmt.Fprintf(env.Stdout, "alias %q points at %s on %s\n", c.alias(), shortFingerprint(fingerprint), serverName(c.To))
	return made, nil
}

// copy pushes the image from src to dst without its aliases: the task sets its own.
func (c *ImageCopy) copy(ctx context.Context, env *tasks.Env, src, dst lxdclient.InstanceServer, fingerprint string) error {
	img, _, err := src.GetImage(fingerprint)
	if err != nil {
		return fmt.Errorf("get image %s: %w", shortFingerprint(fingerprint), err)
	}
	img.Aliases = nil
	fmt.Fprintf(env.Stdout, "copying image %s (%d MiB) to %s\n", shortFingerprint(fingerprint), img.Size>>20, serverName(c.To))
	op, err := dst.CopyImage(src, *img, &lxdclient.ImageCopyArgs{Mode: "push"})
	if err != nil {
		return fmt.Errorf("copy: %w", err)
	}
	done := make(chan error, 1)
	go func() { done <- op.Wait() }()
	select {
	case err = <-done:
	case <-ctx.Done():
		_ = op.CancelTarget()
		return ctx.Err()
	}
	if err != nil {
		// A copy left running by a killed run may have stored the image meanwhile.
		if _, _, gerr := dst.GetImage(fingerprint); gerr == nil {
			return nil
		}
		return fmt.Errorf("copy: %w", err)
	}
	fmt.Fprintf(env.Stdout, "image %s copied\n", shortFingerprint(fingerprint))
	return nil
}

// Destroy removes what the run created on to: the image (as lxd_delete removes an
// image by its alias) or only the alias.
func (c *ImageCopy) Destroy(ctx context.Context, env *tasks.Env, outputs tasks.Outputs) error {
	made := ""
	if v, ok := outputs["made"]; ok && v.Type() == cty.String && v.IsKnown() && !v.IsNull() {
		made = v.AsString()
	}
	switch made {
	case madeImage:
		_, err := (&Delete{Remote: c.To, Images: []string{c.alias()}}).Run(ctx, env)
		return err
	case madeAlias:
		return retryErr(ctx, env, func(ctx context.Context, env *tasks.Env) error {
			dst, err := connect(ctx, remoteIn(env, c.To))
			if err != nil {
				return fmt.Errorf("remove alias %q: %w", c.alias(), err)
			}
			if err := dst.DeleteImageAlias(c.alias()); err != nil && !isNotFound(err) {
				return fmt.Errorf("remove alias %q: %w", c.alias(), err)
			}
			fmt.Fprintf(env.Stdout, "alias %q on %s removed\n", c.alias(), serverName(c.To))
			return nil
		})
	}
	fmt.Fprintf(env.Stdout, "image %q on %s was there before: kept\n", c.alias(), serverName(c.To))
	return nil
}

// Probe reports the alias gone from to, or pointing at another image.
func (c *ImageCopy) Probe(ctx context.Context, env *tasks.Env, outputs tasks.Outputs) (string, error) {
	dst, err := connect(ctx, remoteIn(env, c.To))
	if err != nil {
		return "", err
	}
	alias, _, err := dst.GetImageAlias(c.alias())
	switch {
	case isNotFound(err):
		return fmt.Sprintf("image alias %q is gone from %s", c.alias(), serverName(c.To)), nil
	case err != nil:
		return "", fmt.Errorf("get alias %q: %w", c.alias(), err)
	}
	if want, ok := outputs["fingerprint"]; ok && want.Type() == cty.String && want.IsKnown() && !want.IsNull() && alias.Target != want.AsString() {
		return fmt.Sprintf("image alias %q on %s points at %s, not %s", c.alias(), serverName(c.To), shortFingerprint(alias.Target), shortFingerprint(want.AsString())), nil
	}
	return "", nil
}

// retryErr is retry for a step with no outputs.
func retryErr(ctx context.Context, env *tasks.Env, step func(context.Context, *tasks.Env) error) error {
	_, err := retry(ctx, env, func(ctx context.Context, env *tasks.Env) (tasks.Outputs, error) { return nil, step(ctx, env) })
	return err
}

// serverName names a remote map in messages: its address, else the local daemon.
func serverName(remote map[string]string) string {
	if a := remote["address"]; a != "" {
		return a
	}
	return "the local daemon"
}

var (
	_ tasks.Task      = (*ImageCopy)(nil)
	_ tasks.Destroyer = (*ImageCopy)(nil)
	_ tasks.Prober    = (*ImageCopy)(nil)
)
