package lxd

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/canonical/lxd/shared/api"
	"github.com/flowdev/flow/tasks"
	"github.com/zclconf/go-cty/cty"
)

// Profile makes sure an LXD profile exists exactly as declared. It is the hcl
// config struct of the lxd_profile task type.
type Profile struct {
	Remote      map[string]string            `hcl:"remote,optional" sensitive_keys:"trust_token" doc:"LXD server to use, as a map: address (https://HOST:PORT; empty = the local unix socket), socket, project, and for HTTPS the paths client_cert, client_key and server_cert, and trust_token (a single-use token of lxc config trust add, which makes the server trust client_cert and pins its certificate at server_cert on first contact; never recorded). Declare it once in locals and pass it to every task that uses it."`
	Name        string                       `hcl:"name" doc:"Profile name."`
	Config      map[string]string            `hcl:"config,optional" doc:"Profile configuration keys, e.g. { \"security.nesting\" = \"true\" }."`
	Devices     map[string]map[string]string `hcl:"devices,optional" doc:"Devices by name, each a map of device keys that includes type, e.g. { data = { type = \"disk\", source = \"/srv\", path = \"/srv\" } }."`
	Description string                       `hcl:"profile_description,optional" doc:"The profile's description, as lxc profile list shows it."`
	Recreate    bool                         `hcl:"recreate,optional" doc:"Update an existing profile that differs from the declaration in place, instead of failing."`
}

func profileType() tasks.Type {
	return tasks.Type{
		Name:    "lxd_profile",
		Summary: "Create an LXD profile with the declared config and devices",
		Doc: `Creates the profile when it is absent. When it exists with exactly the declared
config, devices and profile_description, the task changes nothing and says
"already present". When it differs, the task fails and names every difference
(config key, device added, removed or changed, description), unless recreate is
true: then the profile is updated in place to match the declaration (a profile
that instances use cannot be deleted, and updating it applies to them at once).`,
		New: func() tasks.Task { return &Profile{} },
		Outputs: []tasks.Output{
			{Name: "name", Type: cty.String, Doc: "The profile name, for lxd_launch's profiles."},
		},
		Undo: "flow destroy deletes the profile (after the instances that use it, when they reference it); a profile that is gone already is skipped.",
		Example: `task "lxd_profile" "microk8s" {
  remote              = local.lxd
  name                = "microk8s"
  profile_description = "nesting for microk8s members"
  config = {
    "security.nesting"    = "true"
    "security.privileged" = "true"
  }
  devices = {
    kmsg = { type = "unix-char", source = "/dev/kmsg", path = "/dev/kmsg" }
  }
}`,
	}
}

// Validate checks the remote, the name and that each device has a type.
func (p *Profile) Validate() error {
	if err := validateRemote(p.Remote); err != nil {
		return &tasks.AttrError{Attr: "remote", Err: err}
	}
	if err := profileNameError(p.Name); err != nil {
		return &tasks.AttrError{Attr: "name", Err: err}
	}
	if err := validateDevices(p.Devices); err != nil {
		return &tasks.AttrError{Attr: "devices", Err: err}
	}
	return nil
}

// Run runs run, again while it fails with a transient fault (see retry).
func (p *Profile) Run(ctx context.Context, env *tasks.Env) (tasks.Outputs, error) {
	return retry(ctx, env, p.run)
}

// run creates the profile, or checks (and with recreate updates) an existing one.
func (p *Profile) run(ctx context.Context, env *tasks.Env) (tasks.Outputs, error) {
	cp := *p
	cp.Remote = remoteIn(env, p.Remote)
	p = &cp // its local paths taken from env's directory
	out := tasks.Outputs{"name": cty.StringVal(p.Name)}
	srv, err := connect(ctx, p.Remote)
	if err != nil {
		return nil, fmt.Errorf("profile %q: %w", p.Name, err)
	}
	put := api.ProfilePut{Config: p.Config, Devices: p.Devices, Description: p.Description}
	have, etag, err := srv.GetProfile(p.Name)
	switch {
	case isNotFound(err):
		if err := srv.CreateProfile(api.ProfilesPost{Name: p.Name, ProfilePut: put}); err != nil {
			return nil, fmt.Errorf("profile %q: create: %w", p.Name, err)
		}
		fmt.Fprintf(env.Stdout, "profile %q created\n", p.Name)
		return out, nil
	case err != nil:
		return nil, fmt.Errorf("profile %q: get: %w", p.Name, err)
	}
	diffs := p.diffs(have)
	switch {
	case len(diffs) == 0:
		alreadyPresent(env, fmt.Sprintf("profile %q", p.Name))
		return out, nil
	case !p.Recreate:
		return nil, fmt.Errorf("profile %q: %w", p.Name, differsError(diffs))
	}
	if err := srv.UpdateProfile(p.Name, put, etag); err != nil {
		return nil, fmt.Errorf("profile %q: update: %w", p.Name, err)
	}
	fmt.Fprintf(env.Stdout, "profile %q updated: %s\n", p.Name, joinDiffs(diffs))
	return out, nil
}

// diffs compares the whole profile: config, devices and description must be
// exactly as declared.
func (p *Profile) diffs(have *api.Profile) []string {
	diffs := configDiffs("config", "profile", have.Config, p.Config, true)
	diffs = append(diffs, deviceDiffs("profile", have.Devices, p.Devices, true)...)
	if have.Description != p.Description {
		diffs = append(diffs, fmt.Sprintf("description: profile has %q, declared %q", have.Description, p.Description))
	}
	return diffs
}

// profileNameError applies LXD's rule for profile names: not empty, no slash,
// not "." or "..".
func profileNameError(name string) error {
	switch {
	case name == "":
		return errors.New("must not be empty")
	case strings.Contains(name, "/"):
		return fmt.Errorf("%q must not contain \"/\"", name)
	case name == "." || name == "..":
		return fmt.Errorf("%q is not a valid profile name", name)
	}
	return nil
}

var _ tasks.Task = (*Profile)(nil)
