package lxd

import (
	"context"
	"fmt"
	"net"
	"sort"

	lxdclient "github.com/canonical/lxd/client"
	"github.com/canonical/lxd/shared/api"
	"github.com/zclconf/go-cty/cty"

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
