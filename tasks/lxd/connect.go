package lxd

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	lxdclient "github.com/canonical/lxd/client"

	"github.com/flowdev/flow/tasks"
)

// remoteKeys are the keys a task's `remote` map may hold, as RemoteDoc explains
// them, in the order errors list them. Certificate and key values are file paths,
// so key material stays on disk and never enters the flow's values, logs or state.
// trust_token is the one secret: single-use, it is never recorded (see trust.go).
var remoteKeys = []string{"address", "client_cert", "client_key", "project", "server_cert", "socket", "trust_token"}

// RemoteDoc is the documentation of the `remote` attribute, shared by every
// LXD task type.
const RemoteDoc = `LXD server to use, as a map: address (https://HOST:PORT; empty = the local unix socket), socket, project, and for HTTPS the paths client_cert, client_key and server_cert, and trust_token (a single-use token of lxc config trust add, which makes the server trust client_cert and pins its certificate at server_cert on first contact; never recorded). Declare it once in locals and pass it to every task that uses it.`

// validateRemote checks a `remote` map offline: known keys, an https address,
// and the certificate files that an HTTPS remote needs.
func validateRemote(remote map[string]string) error {
	var unknown []string
	for k := range remote {
		if !slices.Contains(remoteKeys, k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return fmt.Errorf("unknown key %q; known keys are %s", unknown[0], strings.Join(remoteKeys, ", "))
	}
	addr := remote["address"]
	if addr == "" {
		for _, k := range []string{"client_cert", "client_key", "server_cert", "trust_token"} {
			if remote[k] != "" {
				return fmt.Errorf("%s is only used with address (an HTTPS remote)", k)
			}
		}
		return nil
	}
	if !strings.HasPrefix(addr, "https://") {
		return fmt.Errorf("address %q must start with https://", addr)
	}
	if remote["socket"] != "" {
		return errors.New("socket and address are mutually exclusive")
	}
	if (remote["client_cert"] == "") != (remote["client_key"] == "") {
		return errors.New("client_cert and client_key must be set together")
	}
	if remote["trust_token"] != "" && (remote["client_cert"] == "" || remote["server_cert"] == "") {
		return errors.New("trust_token needs client_cert, client_key and server_cert: the paths of the certificate it makes trusted and of the server's, pinned on first contact")
	}
	return nil
}

// remoteIn returns remote with its local paths (socket, client_cert, client_key,
// server_cert) taken from env's directory (tasks.Env.Dir); remote itself is left as
// it is, since the flow's inputs are recorded from it.
func remoteIn(env *tasks.Env, remote map[string]string) map[string]string {
	if len(remote) == 0 {
		return remote
	}
	out := maps.Clone(remote)
	for _, k := range []string{"socket", "client_cert", "client_key", "server_cert"} {
		if v, ok := remote[k]; ok {
			out[k] = env.InDir(v)
		}
	}
	return out
}

// connect opens a connection for one task run. It is bound to ctx: cancelling
// ctx aborts every request made through it, which is how an interrupted run
// stops waiting on LXD. Connections are cheap (one GET /1.0), so none is shared
// between tasks.
func connect(ctx context.Context, remote map[string]string) (lxdclient.InstanceServer, error) {
	var (
		srv lxdclient.InstanceServer
		err error
	)
	if addr := remote["address"]; addr != "" {
		if err := ensureTrust(ctx, remote); err != nil {
			return nil, fmt.Errorf("connect to LXD at %s: %w", addr, err)
		}
		if srv, err = connectHTTPS(ctx, remote); err != nil {
			return nil, err
		}
		// An untrusted client still connects and may read /1.0; say so now rather
		// than with a bare "not authorized" on the task's first real request.
		if info, _, ierr := srv.GetServer(); ierr == nil && info.Auth != "trusted" {
			if remote["client_cert"] == "" {
				return nil, fmt.Errorf("connect to LXD at %s: the server does not trust this client, and no client_cert given (set client_cert and client_key to a certificate it trusts)", addr)
			}
			return nil, fmt.Errorf("connect to LXD at %s: the server does not trust client_cert %s (add it there with `lxc config trust add`)", addr, remote["client_cert"])
		}
	} else {
		srv, err = lxdclient.ConnectLXDUnixWithContext(ctx, remote["socket"], &lxdclient.ConnectionArgs{UserAgent: "flow"})
		if err != nil {
			return nil, fmt.Errorf("connect to LXD over its unix socket: %w (is the daemon running? LXD_DIR and LXD_SOCKET choose another socket)", err)
		}
	}
	if p := remote["project"]; p != "" {
		srv = srv.UseProject(p)
	}
	return srv, nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
