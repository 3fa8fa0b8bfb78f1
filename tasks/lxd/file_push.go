package lxd

import (
	"context"
	"errors"
	"fmt"
	"path"

	"github.com/flowdev/flow/tasks"
	"github.com/zclconf/go-cty/cty"
)

// FilePush copies a local file, a local directory tree or literal content into
// an LXD instance. It is the hcl config struct of the lxd_file_push task type.
type FilePush struct {
	Remote      map[string]string `hcl:"remote,optional" sensitive_keys:"trust_token" doc:"LXD server to use, as a map: address (https://HOST:PORT; empty = the local unix socket), socket, project, and for HTTPS the paths client_cert, client_key and server_cert, and trust_token (a single-use token of lxc config trust add, which makes the server trust client_cert and pins its certificate at server_cert on first contact; never recorded). Declare it once in locals and pass it to every task that uses it."`
	Instance    string            `hcl:"instance" doc:"Name of the instance to push into; it may be stopped."`
	Source      string            `hcl:"source,optional" doc:"Local file or directory; a directory is pushed recursively, symlinks as symlinks. Exactly one of source and content is required."`
	Content     *string           `hcl:"content,optional" doc:"Text written to destination instead of a local file. Exactly one of source and content is required."`
	Destination string            `hcl:"destination" doc:"Absolute path inside the instance: the file to write or, for a directory source, the directory that receives the directory's contents."`
	Mode        string            `hcl:"mode,optional" doc:"Octal mode of every file written, e.g. \"0644\" (permission bits only); default the local file's mode (0644 for content). Directories of a tree are 0755."`
	UID         int               `hcl:"uid,optional" doc:"Numeric owner of everything written; default 0 (root)."`
	GID         int               `hcl:"gid,optional" doc:"Numeric group of everything written; default 0 (root)."`
	CreateDirs  bool              `hcl:"create_dirs,optional" doc:"Create missing parent directories of destination (0755, owned by root), like mkdir -p."`
}

func filePushType() tasks.Type {
	return tasks.Type{
		Name:    "lxd_file_push",
		Summary: "Copy a local file, directory tree or text into an LXD instance",
		Doc: `Writes source (a file, or a directory recursively, like lxc file push -r) or
content to destination inside the instance, with the declared mode and owner.
For a directory, destination is the directory that receives its contents:
source "dist" and destination "/srv/app" give /srv/app/index.html.

Files that already match (same size and sha256, read back from the instance,
and same mode, uid and gid) are skipped; when nothing changed the task says
"already present". LXD keeps the owner and mode of a file it overwrites, so a
file whose mode or owner differs is deleted and written anew. Existing
directories are left as they are. Nothing is deleted from a tree that the
source does not have. Symlinks keep their target as written; LXD 5.0 makes
them owned by root whatever uid and gid say.`,
		New: func() tasks.Task { return &FilePush{} },
		Outputs: []tasks.Output{
			{Name: "destination", Type: cty.String, Doc: "The destination path, cleaned."},
			{Name: "files", Type: cty.Number, Doc: "Number of files and symlinks the push covers, whether written now or already present."},
			{Name: "sha256", Type: cty.String, Doc: "Hex sha256 of the file; for a tree, of the lines \"SHA256  PATH\" (as sha256sum prints them) of its files and symlinks sorted by path, a symlink counting as its target. lxd_file_pull of the same tree gives the same value."},
		},
		Undo: "Not undone on its own: the pushed files go when their instance is destroyed.",
		Example: `task "lxd_file_push" "bundle" {
  remote      = local.lxd
  instance    = "member1"
  source      = "build/app.tar"
  destination = "/opt/app/app.tar"
  mode        = "0640"
  uid         = 1000
  gid         = 1000
  create_dirs = true
}`,
	}
}

// Validate checks the remote, that exactly one of source and content is set,
// the destination, the mode and the owner.
func (p *FilePush) Validate() error {
	if err := validateRemote(p.Remote); err != nil {
		return &tasks.AttrError{Attr: "remote", Err: err}
	}
	if err := instanceNameError(p.Instance); err != nil {
		return &tasks.AttrError{Attr: "instance", Err: err}
	}
	switch {
	case p.Source != "" && p.Content != nil:
		return &tasks.AttrError{Attr: "content", Err: errors.New("source and content are mutually exclusive; set only one")}
	case p.Source == "" && p.Content == nil:
		return &tasks.AttrError{Attr: "source", Err: errors.New("one of source or content is required")}
	}
	if err := validateInstancePath(p.Destination); err != nil {
		return &tasks.AttrError{Attr: "destination", Err: err}
	}
	if _, err := parseMode(p.Mode, 0); err != nil {
		return &tasks.AttrError{Attr: "mode", Err: err}
	}
	for attr, id := range map[string]int{"uid": p.UID, "gid": p.GID} {
		if id < 0 {
			return &tasks.AttrError{Attr: attr, Err: fmt.Errorf("%d is not a valid numeric ID", id)}
		}
	}
	return nil
}

// Run runs run, again while it fails with a transient fault (see retry).
func (p *FilePush) Run(ctx context.Context, env *tasks.Env) (tasks.Outputs, error) {
	return retry(ctx, env, p.run)
}

// run scans the source, makes sure the parent directory exists and writes
// every entry that does not match yet.
func (p *FilePush) run(ctx context.Context, env *tasks.Env) (tasks.Outputs, error) {
	cp := *p
	cp.Remote = remoteIn(env, p.Remote)
	p = &cp // its local paths taken from env's directory
	dest := path.Clean(p.Destination)
	fail := func(err error) error {
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		return fmt.Errorf("push %q to %q: %w", p.what(dest), p.Instance, err)
	}
	src, err := scanPushSource(ctx, env.InDir(p.Source), p.Content, dest)
	if err != nil {
		return nil, fail(err)
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
	fileMode, _ := parseMode(p.Mode, -1)
	w := &pusher{ctx: ctx, srv: srv, instance: p.Instance, uid: int64(p.UID), gid: int64(p.GID), mode: fileMode, out: env.Stdout}
	if err := w.ensureDir(path.Dir(dest), p.CreateDirs); err != nil {
		return nil, fail(err)
	}
	changed := 0
	for _, e := range src.entries {
		if err := ctx.Err(); err != nil {
			return nil, fail(err)
		}
		did, err := w.push(src, e, path.Join(dest, e.rel))
		if err != nil {
			return nil, fail(err)
		}
		if did {
			changed++
		}
	}
	if changed == 0 {
		alreadyPresent(env, fmt.Sprintf("%s on %q", dest, p.Instance))
	}
	sum := src.entries[0].sum
	if src.isTree() {
		sum = treeDigest(src.entries)
	}
	return tasks.Outputs{
		"destination": cty.StringVal(dest),
		"files":       cty.NumberIntVal(int64(countFiles(src.entries))),
		"sha256":      cty.StringVal(sum),
	}, nil
}

// what names the pushed thing in errors: the source, or for content the
// destination.
func (p *FilePush) what(dest string) string {
	if p.Content != nil {
		return dest
	}
	return p.Source
}

var _ tasks.Task = (*FilePush)(nil)
