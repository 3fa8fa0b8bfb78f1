package lxd

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"strings"
	"time"

	lxdclient "github.com/canonical/lxd/client"
	"github.com/canonical/lxd/shared/api"
	"github.com/flowdev/flow/tasks"
	"github.com/zclconf/go-cty/cty"
)

// ProxyDevice makes sure an instance has a proxy device as declared. It is
// the hcl config struct of the proxy_device task type.
type ProxyDevice struct {
	Remote   map[string]string `hcl:"remote,optional" sensitive_keys:"trust_token" doc:"LXD server to use, as a map: address (https://HOST:PORT; empty = the local unix socket), socket, project, and for HTTPS the paths client_cert, client_key and server_cert, and trust_token (a single-use token of lxc config trust add, which makes the server trust client_cert and pins its certificate at server_cert on first contact; never recorded). Declare it once in locals and pass it to every task that uses it."`
	Instance string            `hcl:"instance" doc:"Name of the instance that gets the device."`
	Name     string            `hcl:"name" doc:"Device name, unique within the instance."`
	Listen   string            `hcl:"listen" doc:"Address the proxy listens on: tcp:ADDR:PORT, udp:ADDR:PORT or unix:PATH; on the host unless bind is \"instance\"."`
	Connect  string            `hcl:"connect" doc:"Address the proxy forwards to, in the same forms; inside the instance unless bind is \"instance\"."`
	Bind     string            `hcl:"bind,optional" doc:"Which side listens: \"host\" (default) or \"instance\"."`
	NAT      bool              `hcl:"nat,optional" doc:"Forward with NAT rules instead of a proxy process (LXD's nat key); needs bind \"host\" and an instance with a static address."`
	Extra    map[string]string `hcl:"extra,optional" doc:"Other proxy device keys, e.g. { proxy_protocol = \"true\" }."`
	Recreate bool              `hcl:"recreate,optional" doc:"Replace a device of the same name that differs from the declaration, instead of failing."`
}

// proxyKeys are the device keys that have attributes of their own.
var proxyKeys = map[string]bool{"type": true, "listen": true, "connect": true, "bind": true, "nat": true}

// proxyUpdateAttempts bounds the tries of an instance update that loses races
// with other updates (tasks adding devices to one instance in parallel).
const proxyUpdateAttempts = 5

func proxyDeviceType() tasks.Type {
	return tasks.Type{
		Name:    "proxy_device",
		Summary: "Add a proxy device (port forward) to an LXD instance",
		Doc: `Adds a proxy device to the instance, like lxc config device add NAME proxy. A
device of that name with the same keys counts as already present; one that
differs fails the task, naming each difference, unless recreate is true: then
it is replaced.

With a local remote (the unix socket) and a tcp listen address on the host, the
task first checks that nothing else listens there, and fails with "listen
address ... is already in use" if something does. Once the device is in place
(or was already) and the instance runs, it waits up to 5 s until the address
accepts a TCP connection.`,
		New: func() tasks.Task { return &ProxyDevice{} },
		Outputs: []tasks.Output{
			{Name: "address", Type: cty.String, Doc: "The listen address without its protocol, e.g. \"127.0.0.1:16441\"; the socket path for unix."},
			{Name: "port", Type: cty.Number, Doc: "The listen port; 0 for unix."},
			{Name: "listen", Type: cty.String, Doc: "The listen attribute as declared."},
		},
		Refresh: "the device is on the instance as declared and, for a tcp address on this host of a running instance, the address accepts a connection",
		Undo:    "flow destroy removes the device from the instance; a device or instance that is gone already is skipped.",
		Example: `task "proxy_device" "api" {
  remote   = local.lxd
  instance = "member1"
  name     = "api"
  listen   = "tcp:127.0.0.1:16443"
  connect  = "tcp:127.0.0.1:16443"
}`,
	}
}

// Validate checks the remote, the names, both addresses and the bind, nat and
// extra keys.
func (p *ProxyDevice) Validate() error {
	if err := validateRemote(p.Remote); err != nil {
		return &tasks.AttrError{Attr: "remote", Err: err}
	}
	if err := instanceNameError(p.Instance); err != nil {
		return &tasks.AttrError{Attr: "instance", Err: err}
	}
	if p.Name == "" {
		return &tasks.AttrError{Attr: "name", Err: errors.New("must not be empty")}
	}
	listen, err := parseProxyAddress(p.Listen)
	if err != nil {
		return &tasks.AttrError{Attr: "listen", Err: err}
	}
	connect, err := parseProxyAddress(p.Connect)
	if err != nil {
		return &tasks.AttrError{Attr: "connect", Err: err}
	}
	switch p.Bind {
	case "", "host", "instance":
	default:
		return &tasks.AttrError{Attr: "bind", Err: fmt.Errorf("%q must be \"host\" or \"instance\"", p.Bind)}
	}
	if p.NAT && (p.Bind == "instance" || listen.proto == "unix" || listen.proto != connect.proto) {
		return &tasks.AttrError{Attr: "nat", Err: errors.New("needs bind \"host\" and the same protocol, tcp or udp, on both sides")}
	}
	for k := range p.Extra {
		if proxyKeys[k] || k == "" {
			return &tasks.AttrError{Attr: "extra", Err: fmt.Errorf("key %q must be a non-empty key other than %s, which have attributes of their own", k, strings.Join(sortedKeys(proxyKeys), ", "))}
		}
	}
	return nil
}

// Run runs run, again while it fails with a transient fault (see retry).
func (p *ProxyDevice) Run(ctx context.Context, env *tasks.Env) (tasks.Outputs, error) {
	return retry(ctx, env, p.run)
}

// run adds (or with recreate replaces) the device, then checks the listen
// address.
func (p *ProxyDevice) run(ctx context.Context, env *tasks.Env) (tasks.Outputs, error) {
	cp := *p
	cp.Remote = remoteIn(env, p.Remote)
	p = &cp // its local paths taken from env's directory
	fail := func(err error) error {
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		return fmt.Errorf("proxy %q on %q: %w", p.Name, p.Instance, err)
	}
	listen, _ := parseProxyAddress(p.Listen)
	srv, err := connect(ctx, p.Remote)
	if err != nil {
		return nil, fail(err)
	}
	// Only a local daemon listens where flow can connect.
	checkHost := p.Remote["address"] == "" && cmp.Or(p.Bind, "host") == "host" && listen.proto == "tcp"
	var running bool
	for attempt := 1; ; attempt++ {
		running, err = p.apply(ctx, env, srv, checkHost, listen)
		if !isUpdateRace(err) || attempt == proxyUpdateAttempts {
			break
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Duration(attempt) * 100 * time.Millisecond):
		}
	}
	if err != nil {
		return nil, fail(err)
	}
	if checkHost && running {
		if err := waitListening(ctx, listen.address); err != nil {
			return nil, fail(fmt.Errorf("listen address %s does not accept connections: %w", listen.address, err))
		}
	}
	return tasks.Outputs{
		"address": cty.StringVal(listen.address),
		"port":    cty.NumberIntVal(int64(listen.port)),
		"listen":  cty.StringVal(p.Listen),
	}, nil
}

// apply reads the instance and adds or replaces the device unless it is
// already as declared. It reports whether the instance runs. An update that
// races with another one fails (see isUpdateRace) and Run retries it.
func (p *ProxyDevice) apply(ctx context.Context, env *tasks.Env, srv lxdclient.InstanceServer, checkHost bool, listen proxyAddress) (bool, error) {
	// An interrupted run may have left its device update running in the daemon,
	// already listening on the address but not yet in the instance's config.
	if err := settleInstance(ctx, srv, p.Instance); err != nil {
		return false, err
	}
	inst, etag, err := srv.GetInstance(p.Instance)
	if isNotFound(err) {
		return false, errors.New("instance not found")
	}
	if err != nil {
		return false, err
	}
	running := inst.StatusCode == api.Running
	want := p.device()
	have, exists := inst.Devices[p.Name]
	if exists {
		diffs := configDiffs("key", "device", normalizeProxy(have), want, true)
		if len(diffs) == 0 {
			alreadyPresent(env, fmt.Sprintf("proxy %q on %q", p.Name, p.Instance))
			return running, nil
		}
		if !p.Recreate {
			return false, differsError(diffs)
		}
	}
	// The device being replaced may hold the address itself.
	if checkHost && !(exists && have["listen"] == p.Listen) && addressInUse(listen.address) &&
		!p.stopLostForkproxy(ctx, env, srv, listen) {
		return false, fmt.Errorf("listen address %s is already in use", listen.address)
	}
	put := inst.Writable()
	put.Devices = maps.Clone(put.Devices)
	if put.Devices == nil {
		put.Devices = map[string]map[string]string{}
	}
	put.Devices[p.Name] = want
	op, err := srv.UpdateInstance(p.Instance, put, etag)
	if err == nil {
		err = waitOp(ctx, p.Remote, op)
	}
	if err != nil && strings.Contains(err.Error(), "address already in use") {
		return false, fmt.Errorf("listen address %s is already in use", listen.address)
	}
	if err != nil {
		return false, fmt.Errorf("add device: %w", err)
	}
	verb := "added"
	if exists {
		verb = "replaced"
	}
	fmt.Fprintf(env.Stdout, "%s proxy %q on %q: %s -> %s\n", verb, p.Name, p.Instance, p.Listen, p.Connect)
	return running, nil
}

// isUpdateRace reports whether an instance update failed because another
// update of the same instance came first: the ETag no longer matched (412),
// or LXD 5.0 refused to start a second update while one ran.
func isUpdateRace(err error) bool {
	return api.StatusErrorCheck(err, http.StatusPreconditionFailed) ||
		(err != nil && strings.Contains(err.Error(), "matching non-reusable operation"))
}

// device is the declared device as LXD stores it.
func (p *ProxyDevice) device() map[string]string {
	d := maps.Clone(p.Extra)
	if d == nil {
		d = map[string]string{}
	}
	d["type"] = "proxy"
	d["listen"] = p.Listen
	d["connect"] = p.Connect
	d["bind"] = cmp.Or(p.Bind, "host")
	if p.NAT {
		d["nat"] = "true"
	}
	return d
}

// normalizeProxy fills in the defaults that a device added by other means
// may leave out, so it compares equal to the same declaration.
func normalizeProxy(have map[string]string) map[string]string {
	d := maps.Clone(have)
	if d["type"] == "proxy" && d["bind"] == "" {
		d["bind"] = "host"
	}
	if d["nat"] == "false" {
		delete(d, "nat")
	}
	return d
}

var _ tasks.Task = (*ProxyDevice)(nil)
