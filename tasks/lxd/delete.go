package lxd

import (
	"context"
	"errors"
	"fmt"
	"slices"

	lxdclient "github.com/canonical/lxd/client"
	"github.com/canonical/lxd/shared/api"
	"github.com/flowdev/flow/tasks"
	"github.com/flowdev/flow/tasks/internal/output"
	"github.com/zclconf/go-cty/cty"
)

// Delete removes instances, then profiles, then images, skipping what is
// already absent. It is the hcl config struct of the lxd_delete task type.
type Delete struct {
	Remote    map[string]string `hcl:"remote,optional" sensitive_keys:"trust_token" doc:"LXD server to use, as a map: address (https://HOST:PORT; empty = the local unix socket), socket, project, and for HTTPS the paths client_cert, client_key and server_cert, and trust_token (a single-use token of lxc config trust add, which makes the server trust client_cert and pins its certificate at server_cert on first contact; never recorded). Declare it once in locals and pass it to every task that uses it."`
	Instances []string          `hcl:"instances,optional" doc:"Instances to delete; running ones are stopped first."`
	Profiles  []string          `hcl:"profiles,optional" doc:"Profiles to delete, after the instances (LXD refuses to delete a profile in use)."`
	Images    []string          `hcl:"images,optional" doc:"Image aliases whose images are deleted, with the aliases; an image that other aliases also name is kept and only the alias is deleted."`
	Force     *bool             `hcl:"force,optional" doc:"Stop running instances before deleting them; default true. With false, a running instance fails the task."`
}

func deleteType() tasks.Type {
	return tasks.Type{
		Name:    "lxd_delete",
		Summary: "Delete LXD instances, profiles and images that exist",
		Doc: `Deletes the listed instances (stopping running ones first, unless force is
false), then the profiles (an instance using a profile keeps it from being deleted),
then the images the listed aliases point at. What is already absent is skipped and
said so, which makes the task safe to re-run.`,
		New: func() tasks.Task { return &Delete{} },
		Outputs: []tasks.Output{
			{Name: "deleted", Type: cty.List(cty.String), Doc: "What this run deleted, as \"instance/NAME\", \"profile/NAME\" and \"image/ALIAS\", in order."},
		},
		Undo: "Not undone: what it deleted stays deleted.",
		Example: `task "lxd_delete" "teardown" {
  remote    = local.lxd
  instances = ["member1", "member2", "member3"]
  profiles  = ["microk8s"]
  images    = ["busybox"]
}`,
	}
}

// Validate checks that something is listed, with no empty or repeated names.
func (d *Delete) Validate() error {
	if err := validateRemote(d.Remote); err != nil {
		return &tasks.AttrError{Attr: "remote", Err: err}
	}
	if len(d.Instances)+len(d.Profiles)+len(d.Images) == 0 {
		return &tasks.AttrError{Attr: "instances", Err: errors.New("nothing to delete: list instances, profiles or images")}
	}
	// A name LXD cannot have would only be reported "already absent".
	for _, list := range []struct {
		attr  string
		names []string
		valid func(string) error
	}{
		{"instances", d.Instances, instanceNameError},
		{"profiles", d.Profiles, profileNameError},
		{"images", d.Images, nil},
	} {
		if err := namesError(list.names, list.valid); err != nil {
			return &tasks.AttrError{Attr: list.attr, Err: err}
		}
	}
	return nil
}

func namesError(names []string, valid func(string) error) error {
	for i, n := range names {
		if n == "" {
			return errors.New("names must not be empty")
		}
		if valid != nil {
			if err := valid(n); err != nil {
				return err
			}
		}
		if slices.Contains(names[:i], n) {
			return fmt.Errorf("%q is listed twice", n)
		}
	}
	return nil
}

// Run runs run, again while it fails with a transient fault (see retry).
func (d *Delete) Run(ctx context.Context, env *tasks.Env) (tasks.Outputs, error) {
	return retry(ctx, env, d.run)
}

// run deletes in dependency order and reports what it deleted.
func (d *Delete) run(ctx context.Context, env *tasks.Env) (tasks.Outputs, error) {
	cp := *d
	cp.Remote = remoteIn(env, d.Remote)
	d = &cp // its local paths taken from env's directory
	srv, err := connect(ctx, d.Remote)
	if err != nil {
		return nil, fmt.Errorf("delete: %w", err)
	}
	var deleted []string
	steps := []struct {
		kind  string
		names []string
		del   func(context.Context, lxdclient.InstanceServer, string) (bool, error)
	}{
		{"instance", d.Instances, d.deleteInstance},
		{"profile", d.Profiles, deleteProfile},
		{"image", d.Images, d.deleteImage},
	}
	for _, step := range steps {
		for _, name := range step.names {
			done, err := step.del(ctx, srv, name)
			if err != nil {
				return nil, fmt.Errorf("delete %s %q: %w", step.kind, name, err)
			}
			if !done {
				fmt.Fprintf(env.Stdout, "%s %q already absent\n", step.kind, name)
				continue
			}
			fmt.Fprintf(env.Stdout, "%s %q deleted\n", step.kind, name)
			deleted = append(deleted, step.kind+"/"+name)
		}
	}
	return tasks.Outputs{"deleted": output.StringList(deleted)}, nil
}

// deleteInstance reports false when the instance does not exist.
func (d *Delete) deleteInstance(ctx context.Context, srv lxdclient.InstanceServer, name string) (bool, error) {
	if err := settleInstance(ctx, srv, name); err != nil {
		return false, err
	}
	inst, _, err := srv.GetInstance(name)
	if isNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("get: %w", err)
	}
	if inst.StatusCode != api.Stopped && d.Force != nil && !*d.Force {
		return false, fmt.Errorf("is %s and force is false", inst.Status)
	}
	return true, removeInstance(ctx, srv, d.Remote, inst)
}

func deleteProfile(_ context.Context, srv lxdclient.InstanceServer, name string) (bool, error) {
	err := srv.DeleteProfile(name)
	if isNotFound(err) {
		return false, nil
	}
	return err == nil, err
}

// deleteImage deletes the image an alias points at, with its aliases. An image
// that other aliases also name is kept and only this alias goes: it is in use
// by something this flow did not create.
func (d *Delete) deleteImage(ctx context.Context, srv lxdclient.InstanceServer, alias string) (bool, error) {
	entry, _, err := srv.GetImageAlias(alias)
	if isNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("get alias: %w", err)
	}
	img, _, err := srv.GetImage(entry.Target)
	if err != nil && !isNotFound(err) {
		return false, fmt.Errorf("get image %s: %w", shortFingerprint(entry.Target), err)
	}
	if img != nil && len(img.Aliases) > 1 {
		if err := srv.DeleteImageAlias(alias); err != nil && !isNotFound(err) {
			return false, fmt.Errorf("delete alias: %w", err)
		}
		return true, nil
	}
	op, err := srv.DeleteImage(entry.Target)
	if err == nil {
		err = waitOp(ctx, d.Remote, op)
	}
	if err != nil && !isNotFound(err) {
		return false, fmt.Errorf("delete image %s: %w", shortFingerprint(entry.Target), err)
	}
	return true, nil
}

var _ tasks.Task = (*Delete)(nil)
