package lxd

import (
	"context"
	"errors"
	"fmt"
	"path"
	"path/filepath"

	"github.com/flowdev/flow/tasks"
	"github.com/zclconf/go-cty/cty"
)

// FilePull copies a file or directory tree out of an LXD instance. It is the
// hcl config struct of the lxd_file_pull task type.
type FilePull struct {
	Remote      map[string]string `hcl:"remote,optional" sensitive_keys:"trust_token" doc:"LXD server to use, as a map: address (https://HOST:PORT; empty = the local unix socket), socket, project, and for HTTPS the paths client_cert, client_key and server_cert, and trust_token (a single-use token of lxc config trust add, which makes the server trust client_cert and pins its certificate at server_cert on first contact; never recorded). Declare it once in locals and pass it to every task that uses it."`
	Instance    string            `hcl:"instance" doc:"Name of the instance to pull from; it may be stopped."`
	Source      string            `hcl:"source" doc:"Absolute path inside the instance: a file (a symlink is followed) or, with recursive, a directory."`
	Destination string            `hcl:"destination" doc:"Local path of the file, or for a directory the local directory that receives its contents; missing parent directories are created."`
	Mode        string            `hcl:"mode,optional" doc:"Octal mode of the local files (permission bits only), default \"0600\". Directories get the same mode plus x wherever it has r (0700 for 0600)."`
	Recursive   bool              `hcl:"recursive,optional" doc:"Pull a directory with everything below it; symlinks in it are recreated as symlinks."`
}

// defaultPullMode keeps pulled files, often credentials, private by default.
const defaultPullMode = 0o600

func filePullType() tasks.Type {
	return tasks.Type{
		Name:    "lxd_file_pull",
		Summary: "Copy a file or directory tree out of an LXD instance",
		Doc: `Copies source from the instance to the local destination. Each file is written
to a temporary file beside its destination and renamed into place, so a reader
never sees a partial file. A local file that already has the same content and
mode is left untouched; when nothing changed the task says "already present".

With recursive, a directory is copied with everything below it into
destination, which is created if needed; local files that the source does not
have are kept.`,
		New: func() tasks.Task { return &FilePull{} },
		Outputs: []tasks.Output{
			{Name: "destination", Type: cty.String, Doc: "The local destination path, cleaned."},
			{Name: "sha256", Type: cty.String, Doc: "Hex sha256 of the file; for a tree, the digest lxd_file_push computes for the same tree."},
		},
		Undo: "Not undone: the pulled file stays on the host.",
		Example: `task "lxd_file_pull" "kubeconfig" {
  remote      = local.lxd
  instance    = "member1"
  source      = "/var/snap/microk8s/current/credentials/client.config"
  destination = ".lab/kubeconfig"
  mode        = "0600"
}`,
	}
}

// Validate checks the remote, the paths and the mode.
func (p *FilePull) Validate() error {
	if err := validateRemote(p.Remote); err != nil {
		return &tasks.AttrError{Attr: "remote", Err: err}
	}
	if err := instanceNameError(p.Instance); err != nil {
		return &tasks.AttrError{Attr: "instance", Err: err}
	}
	if err := validateInstancePath(p.Source); err != nil {
		return &tasks.AttrError{Attr: "source", Err: err}
	}
	if p.Destination == "" {
		return &tasks.AttrError{Attr: "destination", Err: errors.New("must not be empty")}
	}
	if _, err := parseMode(p.Mode, 0); err != nil {
		return &tasks.AttrError{Attr: "mode", Err: err}
	}
	return nil
}

// Run runs run, again while it fails with a transient fault (see retry).
func (p *FilePull) Run(ctx context.Context, env *tasks.Env) (tasks.Outputs, error) {
	return retry(ctx, env, p.run)
}

// run pulls the source file, or walks the source tree and pulls every entry.
func (p *FilePull) run(ctx context.Context, env *tasks.Env) (tasks.Outputs, error) {
	cp := *p
	cp.Remote = remoteIn(env, p.Remote)
	p = &cp // its local paths taken from env's directory
	src := path.Clean(p.Source)
	fail := func(err error) error {
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		return fmt.Errorf("pull %q from %q: %w", src, p.Instance, err)
	}
	srv, err := connect(ctx, p.Remote)
	if err != nil {
		return nil, fail(err)
	}
	if _, _, err := srv.GetInstance(p.Instance); err != nil {
		if isNotFound(err) {
			return nil, fail(errors.New("instance not found"))
		}
		return nil, fail(err)
	}
	mode, _ := parseMode(p.Mode, defaultPullMode)
	r := &puller{ctx: ctx, srv: srv, instance: p.Instance, mode: mode, out: env.Stdout}
	dest := filepath.Clean(p.Destination) // as the flow names it, in messages and outputs
	local := env.InDir(dest)
	var sum string
	if p.Recursive {
		sum, err = r.pullTree(src, local)
	} else {
		sum, err = r.pullOne(src, local)
	}
	if err != nil {
		return nil, fail(err)
	}
	if r.changed == 0 {
		alreadyPresent(env, fmt.Sprintf("%s from %q", dest, p.Instance))
	}
	return tasks.Outputs{
		"destination": cty.StringVal(dest),
		"sha256":      cty.StringVal(sum),
	}, nil
}

var _ tasks.Task = (*FilePull)(nil)
