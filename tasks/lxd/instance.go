package lxd

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sort"
	"strings"

	lxdclient "github.com/canonical/lxd/client"
	"github.com/canonical/lxd/shared/api"
	"github.com/zclconf/go-cty/cty"

	"github.com/flowdev/flow/tasks"
	"github.com/flowdev/flow/tasks/internal/output"
)

// changeInstanceState starts, stops (forcibly: the callers are about to
// delete or replace it) or unfreezes an instance and waits with ctx.
func changeInstanceState(ctx context.Context, srv lxdclient.InstanceServer, remote map[string]string, name, action string) error {
	op, err := srv.UpdateInstanceState(name, api.InstanceStatePut{Action: action, Force: action == "stop", Timeout: -1}, "")
	if err != nil {
		return fmt.Errorf("%s: %w", action, err)
	}
	if err := waitOp(ctx, remote, op); err != nil {
		return fmt.Errorf("%s: %w", action, err)
	}
	return nil
}

// removeInstance stops a running instance and deletes it. An instance that
// disappears on the way (an ephemeral one deletes itself when stopped) counts
// as removed.
func removeInstance(ctx context.Context, srv lxdclient.InstanceServer, remote map[string]string, inst *api.Instance) error {
	if inst.StatusCode != api.Stopped {
		if err := changeInstanceState(ctx, srv, remote, inst.Name, "stop"); err != nil && !isNotFound(err) {
			return err
		}
	}
	op, err := srv.DeleteInstance(inst.Name)
	if err == nil {
		err = waitOp(ctx, remote, op)
	}
	if err != nil && !isNotFound(err) {
		return fmt.Errorf("delete: %w", err)
	}
	return nil
}

// globalAddresses returns an instance's global IPv4 and IPv6 addresses, sorted,
// as cty lists (empty, not null, when there are none).
func globalAddresses(state *api.InstanceState) (ipv4, ipv6 cty.Value) {
	var v4, v6 []string
	for _, nic := range state.Network {
		for _, a := range nic.Addresses {
			if a.Scope != "global" {
				continue
			}
			if ip := net.ParseIP(a.Address); ip != nil && ip.To4() != nil {
				v4 = append(v4, a.Address)
			} else {
				v6 = append(v6, a.Address)
			}
		}
	}
	sort.Strings(v4)
	sort.Strings(v6)
	return output.StringList(v4), output.StringList(v6)
}

// errLeftStopped is what a task meets when its instance is stopped although LXD's
// own record says it was last running: it went down while the daemon was not there
// to record the stop (a daemon restart). A transient fault: the task runs again and
// starts it (startIfLeftRunning).
var errLeftStopped = errors.New("instance stopped while LXD was away")

// leftRunning reports whether a stopped instance is one LXD last recorded running
// (volatile.last_state.power RUNNING): nobody stopped it through LXD, which records
// every stop it makes or sees. LXD itself starts such instances when it starts,
// but only then, in the background, and not one that goes down after that.
func leftRunning(inst *api.Instance) bool {
	return inst.StatusCode == api.Stopped && inst.Config["volatile.last_state.power"] == "RUNNING"
}

// startIfLeftRunning starts the instance when it is stopped and leftRunning, and
// reports whether it did; an instance stopped through LXD is left alone. A start
// that meets the instance already running (LXD's own start at start-up won the
// race) counts as done.
func startIfLeftRunning(ctx context.Context, srv lxdclient.InstanceServer, remote map[string]string, name string, env *tasks.Env) (bool, error) {
	if err := settleInstance(ctx, srv, name); err != nil {
		return false, err
	}
	inst, _, err := srv.GetInstance(name)
	if err != nil {
		return false, fmt.Errorf("get instance: %w", err)
	}
	if !leftRunning(inst) {
		return false, nil
	}
	fmt.Fprintf(env.Stdout, "instance %q is stopped, but LXD last recorded it running (it went down while the daemon was away): starting it\n", name)
	if err := changeInstanceState(ctx, srv, remote, name, "start"); err != nil {
		if state, _, serr := srv.GetInstanceState(name); serr != nil || state.StatusCode != api.Running {
			return false, err
		}
	}
	return true, nil
}

// isNotRunning reports whether err is LXD's refusal to act on a stopped instance.
func isNotRunning(err error) bool {
	return err != nil && strings.Contains(err.Error(), "Instance is not running")
}
