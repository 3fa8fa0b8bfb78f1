package lxd

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"

	lxdclient "github.com/canonical/lxd/client"
	"github.com/canonical/lxd/shared/api"
	"github.com/flowdev/flow/tasks"
	"github.com/zclconf/go-cty/cty"
)

// Launch makes sure an instance exists as declared and is running, and
// optionally waits until a command succeeds inside it. It is the hcl config
// struct of the lxd_launch task type.
type Launch struct {
	Remote      map[string]string            `hcl:"remote,optional" sensitive_keys:"trust_token" doc:"LXD server to use, as a map: address (https://HOST:PORT; empty = the local unix socket), socket, project, and for HTTPS the paths client_cert, client_key and server_cert, and trust_token (a single-use token of lxc config trust add, which makes the server trust client_cert and pins its certificate at server_cert on first contact; never recorded). Declare it once in locals and pass it to every task that uses it."`
	Name        string                       `hcl:"name" doc:"Instance name (letters, digits and hyphens, as a hostname)."`
	Image       string                       `hcl:"image" doc:"Alias or fingerprint in the server's image store, or REMOTE:ALIAS for the remotes ubuntu, ubuntu-daily and images."`
	ImageServer map[string]string            `hcl:"image_server,optional" doc:"Another image server to take image from: { url = \"https://...\", protocol = \"simplestreams\" } (protocol simplestreams, the default, or lxd)."`
	Profiles    []string                     `hcl:"profiles,optional" doc:"Profiles applied in order; default [\"default\"]."`
	Config      map[string]string            `hcl:"config,optional" doc:"Instance configuration keys, e.g. { \"limits.cpu\" = \"2\" }."`
	Devices     map[string]map[string]string `hcl:"devices,optional" doc:"Instance devices by name, each a map of device keys that includes type."`
	Ephemeral   bool                         `hcl:"ephemeral,optional" doc:"Create an ephemeral instance, which LXD deletes when it stops."`
	WaitFor     []string                     `hcl:"wait_for,optional" doc:"Command (argv) run inside the instance until it exits 0, e.g. [\"test\", \"-e\", \"/run/ready\"]."`
	WaitTimeout tasks.Duration               `hcl:"wait_timeout,optional" doc:"How long wait_for may take to succeed, as a duration; default \"60s\"."`
	Recreate    bool                         `hcl:"recreate,optional" doc:"Replace an existing instance that differs from the declaration (stop, delete, create) instead of failing."`
	Target      string                       `hcl:"target,optional" doc:"Cluster member to create the instance on, as lxc launch --target does, or @GROUP for any member of that cluster group; unset, LXD chooses (the member with the fewest instances). Only for a remote that is an LXD cluster. An existing instance on a member the target does not name is a difference."`
	TargetGroup string                       `hcl:"target_group,optional" doc:"Cluster group to create the instance in (any of its members, LXD's scheduler choosing), as target = \"@GROUP\" says; not with target. Only for a remote that is an LXD cluster."`
}

const defaultWaitTimeout = 60 * time.Second

func launchType() tasks.Type {
	return tasks.Type{
		Name:    "lxd_launch",
		Summary: "Create and start an LXD instance, optionally waiting until it is ready",
		Doc: `Creates the instance from image with the declared profiles, config, devices and
ephemeral flag, starts it and waits until it runs. With wait_for, the command is then
run inside every 250 ms until it exits 0 or wait_timeout passes; the error of a
timeout includes the command's last output.

When the instance exists, it is compared with the declaration: the image (the
declared image's fingerprint against the instance's volatile.base_image; not for
remote aliases, which move to newer builds), the profiles, the declared config keys
and devices (keys and devices LXD or other tasks add are ignored) and ephemeral.
If it matches, a stopped instance is started, a running one is left alone
("already present"), and wait_for runs again. If it differs, the task fails naming
every difference, unless recreate is true: then the instance is stopped, deleted
and created anew. A stopped instance that never started and does not start, the
remains of a create cut short by a daemon restart, is deleted and created again.

On an LXD cluster, target chooses the member the instance is created on, and the
output location names the member it is on. Every other request about the instance
(exec, files, devices, delete) may go to any member: LXD forwards it to the
instance's own. A refresh sees an instance that moved to another member (lxc move,
a cluster evacuation) since its launch, and the run then records where it is.`,
		New: func() tasks.Task { return &Launch{} },
		Outputs: []tasks.Output{
			{Name: "name", Type: cty.String, Doc: "The instance name."},
			{Name: "status", Type: cty.String, Doc: "The instance status after the task: \"Running\"."},
			{Name: "ipv4", Type: cty.List(cty.String), Doc: "The instance's global IPv4 addresses, sorted; empty without a network."},
			{Name: "ipv6", Type: cty.List(cty.String), Doc: "The instance's global IPv6 addresses, sorted; empty without a network."},
			{Name: "location", Type: cty.String, Doc: "The cluster member the instance is on, as LXD reports it (\"none\" on a server that is not a cluster)."},
		},
		Refresh: "the instance exists and runs (a daemon restart can leave it stopped), on a cluster on the member its run recorded",
		Undo:    "flow destroy stops and deletes the instance, with its devices and the files pushed into it; an instance that is gone already is skipped.",
		Example: `task "lxd_launch" "member" {
  for_each     = toset(["member1", "member2"])
  remote       = local.lxd
  name         = each.key
  image        = "ubuntu:22.04"
  profiles     = ["default", lxd_profile.microk8s.name]
  config       = { "limits.cpu" = "2", "limits.memory" = "4GiB" }
  wait_for     = ["systemctl", "is-system-running", "--wait"]
  wait_timeout = "3m"
}`,
	}
}

// Validate checks names, the image reference, devices and the wait settings.
func (l *Launch) Validate() error {
	if err := validateRemote(l.Remote); err != nil {
		return &tasks.AttrError{Attr: "remote", Err: err}
	}
	if err := instanceNameError(l.Name); err != nil {
		return &tasks.AttrError{Attr: "name", Err: err}
	}
	if err := validateImageServer(l.ImageServer); err != nil {
		return &tasks.AttrError{Attr: "image_server", Err: err}
	}
	if _, err := parseImage(l.Image, l.ImageServer); err != nil {
		return &tasks.AttrError{Attr: "image", Err: err}
	}
	for _, name := range l.Profiles {
		if name == "" {
			return &tasks.AttrError{Attr: "profiles", Err: errors.New("profile names must not be empty")}
		}
		if err := profileNameError(name); err != nil {
			return &tasks.AttrError{Attr: "profiles", Err: err}
		}
	}
	if err := validateDevices(l.Devices); err != nil {
		return &tasks.AttrError{Attr: "devices", Err: err}
	}
	if l.WaitFor != nil && (len(l.WaitFor) == 0 || l.WaitFor[0] == "") {
		return &tasks.AttrError{Attr: "wait_for", Err: errors.New("must name a program as its first element")}
	}
	if _, err := l.waitTimeout(); err != nil {
		return err
	}
	if err := targetError(l.Target); err != nil {
		return &tasks.AttrError{Attr: "target", Err: err}
	}
	if l.TargetGroup == "" {
		return nil
	}
	if l.Target != "" {
		return &tasks.AttrError{Attr: "target_group", Err: errors.New("set target or target_group, not both")}
	}
	if strings.HasPrefix(l.TargetGroup, "@") {
		return &tasks.AttrError{Attr: "target_group", Err: fmt.Errorf("%q: a group's name, without target's \"@\"", l.TargetGroup)}
	}
	if err := targetError("@" + l.TargetGroup); err != nil {
		return &tasks.AttrError{Attr: "target_group", Err: err}
	}
	return nil
}

// Run runs run, again while it fails with a transient fault (see retry).
func (l *Launch) Run(ctx context.Context, env *tasks.Env) (tasks.Outputs, error) {
	return retry(ctx, env, l.run)
}

// run creates or checks the instance, starts it, waits for wait_for and
// reports its state.
func (l *Launch) run(ctx context.Context, env *tasks.Env) (tasks.Outputs, error) {
	cp := *l
	cp.Remote = remoteIn(env, l.Remote)
	if cp.TargetGroup != "" {
		cp.Target = "@" + cp.TargetGroup // one way to say it from here on
	}
	l = &cp // its local paths taken from env's directory
	srv, err := connect(ctx, l.Remote)
	if err != nil {
		return nil, fmt.Errorf("launch %q: %w", l.Name, err)
	}
	if l.Target != "" && !srv.IsClustered() {
		return nil, fmt.Errorf("launch %q: target %q: the server is not an LXD cluster", l.Name, l.Target)
	}
	ref, err := parseImage(l.Image, l.ImageServer)
	if err != nil {
		return nil, fmt.Errorf("launch %q: image: %w", l.Name, err)
	}
	fingerprint := ""
	if ref.server == "" {
		fingerprint, err = resolveLocalImage(srv, ref.name)
		// An image deleted after the launch does not make the instance wrong: it
		// is checked without its image, since there is nothing to compare with.
		if errors.Is(err, errImageNotFound) && l.instanceExists(srv) {
			fmt.Fprintf(env.Stdout, "image %q is no longer in the image store; instance %q is checked without it\n", l.Image, l.Name)
			err = nil
		}
		if err != nil {
			return nil, fmt.Errorf("launch %q: %w", l.Name, err)
		}
	}
	if err := l.ensureRunning(ctx, srv, env, ref, fingerprint); err != nil {
		return nil, fmt.Errorf("launch %q: %w", l.Name, err)
	}
	if err := l.waitReady(ctx, srv, env); err != nil {
		return nil, fmt.Errorf("launch %q: %w", l.Name, err)
	}
	state, _, err := srv.GetInstanceState(l.Name)
	if err != nil {
		return nil, fmt.Errorf("launch %q: get state: %w", l.Name, err)
	}
	if state.StatusCode != api.Running {
		// Stopped behind the daemon's back after it started (a daemon restart):
		// run again, and ensureRunning starts it. Any other state is an error.
		if inst, _, gerr := srv.GetInstance(l.Name); gerr == nil && leftRunning(inst) {
			return nil, fmt.Errorf("launch %q: instance is %s after start: %w", l.Name, state.Status, errLeftStopped)
		}
		return nil, fmt.Errorf("launch %q: instance is %s after start, want Running", l.Name, state.Status)
	}
	inst, _, err := srv.GetInstance(l.Name)
	if err != nil {
		return nil, fmt.Errorf("launch %q: get instance: %w", l.Name, err)
	}
	ipv4, ipv6 := globalAddresses(state)
	return tasks.Outputs{
		"name":     cty.StringVal(l.Name),
		"status":   cty.StringVal(state.Status),
		"ipv4":     ipv4,
		"ipv6":     ipv6,
		"location": cty.StringVal(inst.Location),
	}, nil
}

// ensureRunning creates and starts the instance, or checks an existing one
// and starts it when it matches.
func (l *Launch) ensureRunning(ctx context.Context, srv lxdclient.InstanceServer, env *tasks.Env, ref imageRef, fingerprint string) error {
	// A killed run may have left its create or start running in the daemon.
	if err := settleInstance(ctx, srv, l.Name); err != nil {
		return err
	}
	inst, _, err := srv.GetInstance(l.Name)
	switch {
	case isNotFound(err):
		return l.create(ctx, srv, env, ref, fingerprint)
	case err != nil:
		return fmt.Errorf("get instance: %w", err)
	}
	diffs := l.diffs(inst, ref, fingerprint)
	placed, err := targetDiff(l.Target, inst.Location, func(member string) ([]string, error) {
		m, _, err := srv.GetClusterMember(member)
		if err != nil {
			return nil, fmt.Errorf("get cluster member %q: %w", member, err)
		}
		return m.Groups, nil
	})
	if err != nil {
		return err
	}
	if placed != "" {
		diffs = append(diffs, placed)
	}
	if len(diffs) > 0 {
		if !l.Recreate {
			return differsError(diffs)
		}
		fmt.Fprintf(env.Stdout, "instance %q differs (%s); replacing it\n", l.Name, joinDiffs(diffs))
		if err := removeInstance(ctx, srv, l.Remote, inst); err != nil {
			return err
		}
		return l.create(ctx, srv, env, ref, fingerprint)
	}
	switch inst.StatusCode {
	case api.Running:
		alreadyPresent(env, fmt.Sprintf("instance %q", l.Name))
		return nil
	case api.Frozen:
		return l.changeState(ctx, srv, env, "unfreeze", "unfrozen")
	default:
		return l.start(ctx, srv, env, inst, ref, fingerprint)
	}
}

// start starts a stopped instance. One that does not start because it was never
// whole (see halfMade) is deleted and created again: nothing in it can be lost.
func (l *Launch) start(ctx context.Context, srv lxdclient.InstanceServer, env *tasks.Env, inst *api.Instance, ref imageRef, fingerprint string) error {
	err := l.changeState(ctx, srv, env, "start", "started")
	if err == nil || transientFault(err) != "" || !halfMade(inst) {
		return err
	}
	fmt.Fprintf(env.Stdout, "instance %q does not start (%v); it was never whole, as a create cut short by an LXD restart leaves it: deleting and creating it again\n", l.Name, err)
	if err := removeInstance(ctx, srv, l.Remote, inst); err != nil {
		return err
	}
	return l.create(ctx, srv, env, ref, fingerprint)
}

// halfMade reports whether an instance created from an image never got its root
// volume: LXD sets volatile.apply_template once the volume is unpacked and clears
// it at the first start, which sets volatile.last_state.power. An instance with
// neither is what a daemon killed during the create leaves behind; LXD does not
// clean it up when it starts again.
func halfMade(inst *api.Instance) bool {
	_, templated := inst.Config["volatile.apply_template"]
	_, started := inst.Config["volatile.last_state.power"]
	return inst.Config["volatile.base_image"] != "" && !templated && !started
}

// create creates the instance and starts it, waiting for both operations.
func (l *Launch) create(ctx context.Context, srv lxdclient.InstanceServer, env *tasks.Env, ref imageRef, fingerprint string) error {
	source := api.InstanceSource{Type: "image", Server: ref.server, Protocol: ref.protocol}
	switch {
	case fingerprint != "":
		source.Fingerprint = fingerprint
	case ref.isFingerprint():
		source.Fingerprint = ref.name
	default:
		source.Alias = ref.name
	}
	on := srv
	if l.Target != "" {
		on = srv.UseTarget(l.Target) // only the create: the instance's other requests go to any member
		fmt.Fprintf(env.Stdout, "creating instance %q from image %q on cluster member %q\n", l.Name, l.Image, l.Target)
	} else {
		fmt.Fprintf(env.Stdout, "creating instance %q from image %q\n", l.Name, l.Image)
	}
	op, err := on.CreateInstance(api.InstancesPost{
		Name:   l.Name,
		Source: source,
		InstancePut: api.InstancePut{
			Profiles:  l.Profiles, // nil lets LXD apply the default profile
			Config:    l.Config,
			Devices:   l.Devices,
			Ephemeral: l.Ephemeral,
		},
	})
	if err == nil {
		err = waitOp(ctx, l.Remote, op)
	}
	if err != nil && l.Target != "" {
		// LXD names the member's address only; a cluster member that is down is
		// known by its name.
		return fmt.Errorf("create on cluster member %q: %w", l.Target, err)
	}
	if err != nil {
		return fmt.Errorf("create: %w", err)
	}
	return l.changeState(ctx, srv, env, "start", "started")
}

func (l *Launch) changeState(ctx context.Context, srv lxdclient.InstanceServer, env *tasks.Env, action, done string) error {
	if err := changeInstanceState(ctx, srv, l.Remote, l.Name, action); err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "instance %q %s\n", l.Name, done)
	return nil
}

func (l *Launch) instanceExists(srv lxdclient.InstanceServer) bool {
	_, _, err := srv.GetInstance(l.Name)
	return err == nil
}

// diffs compares an existing instance with the declaration. Only declared
// config keys and devices count: LXD adds volatile.* keys, and other tasks
// (proxy_device) add devices.
func (l *Launch) diffs(inst *api.Instance, ref imageRef, fingerprint string) []string {
	var diffs []string
	base := inst.Config["volatile.base_image"]
	switch {
	case fingerprint != "" && base != fingerprint:
		diffs = append(diffs, fmt.Sprintf("image: instance was created from %s, declared %q is %s", shortFingerprint(base), l.Image, shortFingerprint(fingerprint)))
	case fingerprint == "" && ref.isFingerprint() && !strings.HasPrefix(base, ref.name):
		diffs = append(diffs, fmt.Sprintf("image: instance was created from %s, declared %q", shortFingerprint(base), l.Image))
	}
	if want := l.profiles(); !slices.Equal(inst.Profiles, want) {
		diffs = append(diffs, fmt.Sprintf("profiles: instance has %q, declared %q", inst.Profiles, want))
	}
	diffs = append(diffs, configDiffs("config", "instance", inst.Config, l.Config, false)...)
	diffs = append(diffs, deviceDiffs("instance", inst.Devices, l.Devices, false)...)
	if inst.Ephemeral != l.Ephemeral {
		diffs = append(diffs, fmt.Sprintf("ephemeral: instance has %t, declared %t", inst.Ephemeral, l.Ephemeral))
	}
	return diffs
}

func (l *Launch) profiles() []string {
	if l.Profiles == nil {
		return []string{"default"}
	}
	return l.Profiles
}

func (l *Launch) waitTimeout() (time.Duration, error) {
	return l.WaitTimeout.Positive("wait_timeout", defaultWaitTimeout)
}

// targetError checks a target offline: a member name, or @ and a cluster group's name.
func targetError(target string) error {
	if target == "" {
		return nil
	}
	name, group := strings.CutPrefix(target, "@")
	switch {
	case name == "":
		return fmt.Errorf("%q names no cluster group", target)
	case strings.ContainsAny(name, "/@") || strings.IndexFunc(name, unicode.IsSpace) >= 0:
		return fmt.Errorf("%q must not contain \"/\", \"@\" (but as its first character) or white space", target)
	case name == "none" && !group:
		return errors.New(`"none" is not a cluster member's name: LXD gives it to a server that is not a cluster`)
	}
	return nil
}

// targetDiff compares the member an existing instance is on (location) with target:
// a member's name must be location, a group (@GROUP) must be one of location's groups,
// which groups looks up. It returns the difference, or "" when target is unset or met.
func targetDiff(target, location string, groups func(member string) ([]string, error)) (string, error) {
	group, isGroup := strings.CutPrefix(target, "@")
	switch {
	case target == "" || target == location:
		return "", nil
	case !isGroup:
		return fmt.Sprintf("target: instance is on member %q, declared %q", location, target), nil
	}
	in, err := groups(location)
	if err != nil {
		return "", err
	}
	if slices.Contains(in, group) {
		return "", nil
	}
	return fmt.Sprintf("target: instance is on member %q, which is not in cluster group %q (declared %q)", location, group, target), nil
}

// shortFingerprint abbreviates a fingerprint the way lxc image list shows it.
func shortFingerprint(fingerprint string) string {
	if fingerprint == "" {
		return "an unknown image"
	}
	return fingerprint[:min(12, len(fingerprint))]
}

// instanceNameError applies LXD's rule: a hostname label.
func instanceNameError(name string) error {
	switch {
	case name == "":
		return errors.New("must not be empty")
	case len(name) > 63:
		return fmt.Errorf("%q is longer than 63 characters", name)
	case name[0] == '-' || name[len(name)-1] == '-' || (name[0] >= '0' && name[0] <= '9'):
		return fmt.Errorf("%q must not start with a digit or hyphen, nor end with a hyphen", name)
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-') {
			return fmt.Errorf("%q may contain only letters, digits and hyphens", name)
		}
	}
	return nil
}

var _ tasks.Task = (*Launch)(nil)
