package lxd

import (
	"context"
	"fmt"
	"maps"

	lxdclient "github.com/canonical/lxd/client"

	"github.com/flowdev/flow/tasks"
)

// The LXD objects flow destroy undoes. Each goes as lxd_delete deletes it, so what is
// already absent is reported and skipped.

// Destroy stops and deletes the instance.
func (l *Launch) Destroy(ctx context.Context, env *tasks.Env, _ tasks.Outputs) error {
	_, err := (&Delete{Remote: l.Remote, Instances: []string{l.Name}}).Run(ctx, env)
	return err
}

// Destroy deletes the profile.
func (p *Profile) Destroy(ctx context.Context, env *tasks.Env, _ tasks.Outputs) error {
	_, err := (&Delete{Remote: p.Remote, Profiles: []string{p.Name}}).Run(ctx, env)
	return err
}

// Destroy deletes the image the alias points at, or only the alias when other
// aliases name the image too.
func (i *ImageImport) Destroy(ctx context.Context, env *tasks.Env, _ tasks.Outputs) error {
	_, err := (&Delete{Remote: i.Remote, Images: []string{i.Alias}}).Run(ctx, env)
	return err
}

// Destroy removes the device from its instance; a device or instance that is gone
// is already undone.
func (p *ProxyDevice) Destroy(ctx context.Context, env *tasks.Env, _ tasks.Outputs) error {
	cp := *p
	cp.Remote = remoteIn(env, p.Remote)
	p = &cp
	srv, err := connect(ctx, p.Remote)
	if err != nil {
		return fmt.Errorf("remove proxy %q from %q: %w", p.Name, p.Instance, err)
	}
	for attempt := 1; ; attempt++ {
		err = p.remove(ctx, env, srv)
		if !isUpdateRace(err) || attempt == proxyUpdateAttempts || ctx.Err() != nil {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("remove proxy %q from %q: %w", p.Name, p.Instance, err)
	}
	return nil
}

func (p *ProxyDevice) remove(ctx context.Context, env *tasks.Env, srv lxdclient.InstanceServer) error {
	if err := settleInstance(ctx, srv, p.Instance); err != nil {
		return err
	}
	inst, etag, err := srv.GetInstance(p.Instance)
	if isNotFound(err) {
		fmt.Fprintf(env.Stdout, "instance %q already absent\n", p.Instance)
		return nil
	}
	if err != nil {
		return err
	}
	if _, ok := inst.Devices[p.Name]; !ok {
		fmt.Fprintf(env.Stdout, "proxy %q on %q already absent\n", p.Name, p.Instance)
		return nil
	}
	put := inst.Writable()
	put.Devices = maps.Clone(put.Devices)
	delete(put.Devices, p.Name)
	op, err := srv.UpdateInstance(p.Instance, put, etag)
	if err == nil {
		err = waitOp(ctx, p.Remote, op)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "proxy %q on %q removed\n", p.Name, p.Instance)
	return nil
}

var (
	_ tasks.Destroyer = (*Launch)(nil)
	_ tasks.Destroyer = (*Profile)(nil)
	_ tasks.Destroyer = (*ImageImport)(nil)
	_ tasks.Destroyer = (*ProxyDevice)(nil)
)
