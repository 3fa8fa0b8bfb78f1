package lxd

import (
	"cmp"
	"context"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/canonical/lxd/shared/api"
	"github.com/zclconf/go-cty/cty"

	"github.com/flowdev/flow/tasks"
)

// probeDial bounds the one connection a proxy device's probe makes to its address.
const probeDial = time.Second

// Probe reports the instance gone or not running, as a daemon restart can leave it
// after its launch succeeded, and, on a cluster, on another member than its launch
// recorded (lxc move, an evacuation): the run records where it is now.
func (l *Launch) Probe(ctx context.Context, env *tasks.Env, recorded tasks.Outputs) (string, error) {
	srv, err := connect(ctx, remoteIn(env, l.Remote))
	if err != nil {
		return "", err
	}
	state, _, err := srv.GetInstanceState(l.Name)
	switch {
	case isNotFound(err):
		return fmt.Sprintf("instance %q is gone", l.Name), nil
	case err != nil:
		return "", fmt.Errorf("get state of %q: %w", l.Name, err)
	case state.StatusCode != api.Running:
		return fmt.Sprintf("instance %q is %s", l.Name, strings.ToUpper(state.Status)), nil
	}
	was := recordedLocation(recorded)
	if was == "" {
		return "", nil // not a cluster, or recorded before the output existed: no second request
	}
	inst, _, err := srv.GetInstance(l.Name)
	if err != nil {
		return "", fmt.Errorf("get instance %q: %w", l.Name, err)
	}
	if inst.Location != was {
		return fmt.Sprintf("instance %q moved from cluster member %q to %q", l.Name, was, inst.Location), nil
	}
	return "", nil
}

// recordedLocation returns the location output of a recorded launch when it names a
// cluster member, else "".
func recordedLocation(recorded tasks.Outputs) string {
	v, ok := recorded["location"]
	if !ok || !v.IsKnown() || v.IsNull() || !v.Type().Equals(cty.String) {
		return ""
	}
	if loc := v.AsString(); loc != "none" {
		return loc
	}
	return ""
}

// Probe reports the device gone or changed, or, for a tcp address on this host of a
// running instance, an address that does not accept a connection.
func (p *ProxyDevice) Probe(ctx context.Context, env *tasks.Env, _ tasks.Outputs) (string, error) {
	srv, err := connect(ctx, remoteIn(env, p.Remote))
	if err != nil {
		return "", err
	}
	inst, _, err := srv.GetInstance(p.Instance)
	switch {
	case isNotFound(err):
		return fmt.Sprintf("instance %q is gone", p.Instance), nil
	case err != nil:
		return "", fmt.Errorf("get instance %q: %w", p.Instance, err)
	}
	have, ok := inst.Devices[p.Name]
	if !ok {
		return fmt.Sprintf("device %q is gone from instance %q", p.Name, p.Instance), nil
	}
	if diffs := configDiffs("key", "device", normalizeProxy(have), p.device(), true); len(diffs) > 0 {
		return fmt.Sprintf("device %q of %q differs: %s", p.Name, p.Instance, strings.Join(diffs, "; ")), nil
	}
	listen, _ := parseProxyAddress(p.Listen)
	onHost := p.Remote["address"] == "" && cmp.Or(p.Bind, "host") == "host" && listen.proto == "tcp"
	if !onHost || inst.StatusCode != api.Running {
		return "", nil
	}
	d := net.Dialer{Timeout: probeDial}
	conn, err := d.DialContext(ctx, "tcp", listen.address)
	if err != nil {
		return fmt.Sprintf("%s does not accept connections", listen.address), nil
	}
	conn.Close()
	return "", nil
}

var (
	_ tasks.Prober = (*Launch)(nil)
	_ tasks.Prober = (*ProxyDevice)(nil)
)
