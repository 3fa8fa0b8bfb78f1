package preflight

import (
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"time"

	lxdclient "github.com/canonical/lxd/client"
)

// remoteAnswer bounds how long one LXD host gets to answer: a host that is down
// refuses at once, one that is unreachable would otherwise hold every task that uses
// it until its own timeout.
const remoteAnswer = 10 * time.Second

// checkRemotes checks that each LXD host of p.Remotes answers over HTTPS with the
// certificates its remote map names, and trusts the client. It reads a trust_token
// nowhere: a host that does not trust the client yet is the task's first contact's to
// settle, so it passes here when a token is given.
func (p *Preflight) checkRemotes(ctx context.Context, r *report) {
	for _, name := range slices.Sorted(maps.Keys(p.Remotes)) {
		remote := p.Remotes[name]
		addr := remote["address"]
		if addr == "" {
			continue // the local daemon: checkLXD's
		}
		if msg := remoteProblem(ctx, remote); msg != "" {
			r.problem("LXD host %q at %s %s", name, addr, msg)
			continue
		}
		r.ok("LXD host %q answers at %s", name, addr)
	}
}

// remoteProblem is why remote's host is not usable, or "".
func remoteProblem(ctx context.Context, remote map[string]string) string {
	args := &lxdclient.ConnectionArgs{UserAgent: "flow"}
	for key, dst := range map[string]*string{
		"client_cert": &args.TLSClientCert,
		"client_key":  &args.TLSClientKey,
		"server_cert": &args.TLSServerCert,
	} {
		path := remote[key]
		if path == "" {
			continue
		}
		b, err := os.ReadFile(path)
		if os.IsNotExist(err) && remote["trust_token"] != "" {
			return probeUnpinned(ctx, remote["address"])
		}
		if err != nil {
			return fmt.Sprintf("cannot be reached: %s: %v", key, err)
		}
		*dst = string(b)
	}
	cctx, cancel := context.WithTimeout(ctx, remoteAnswer)
	defer cancel()
	srv, err := lxdclient.ConnectLXDWithContext(cctx, remote["address"], args)
	if err != nil {
		return "does not answer: " + err.Error()
	}
	info, _, err := srv.GetServer()
	switch {
	case err != nil:
		return "does not answer: " + err.Error()
	case info.Auth != "trusted" && remote["trust_token"] == "":
		return "does not trust client_cert " + remote["client_cert"] + " (add it there with `lxc config trust add`, or give a trust_token)"
	}
	return ""
}

// probeUnpinned checks that a host whose certificate is not pinned yet (its trust
// token will pin it) answers at all.
func probeUnpinned(ctx context.Context, addr string) string {
	cctx, cancel := context.WithTimeout(ctx, remoteAnswer)
	defer cancel()
	if _, err := lxdclient.ConnectPublicLXDWithContext(cctx, addr, &lxdclient.ConnectionArgs{UserAgent: "flow", InsecureSkipVerify: true}); err != nil {
		return "does not answer: " + err.Error()
	}
	return ""
}
