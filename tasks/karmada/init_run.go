package karmada

import (
	"context"
	"errors"
	"fmt"
	"github.com/flowdev/flow/tasks/kube"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/flowdev/flow/tasks"
	"github.com/zclconf/go-cty/cty"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// readyzTimeout bounds each request to an existing Karmada API server, so an
// unreachable one costs seconds, not a TCP timeout.
const readyzTimeout = 5 * time.Second

// defaultEtcdData is karmadactl init's default --etcd-data.
const defaultEtcdData = "/var/lib/karmada-etcd"

var namespaceResource = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}

// Run skips a complete control plane (tuning its Deployments when only that is
// missing), removes a half-done one, then runs karmadactl init and tunes the
// Deployments (controller_manager_args, host_network).
func (i *Init) Run(ctx context.Context, env *tasks.Env) (tasks.Outputs, error) {
	i = i.in(env)
	bin := newBinary(i.Karmadactl, i.KarmadactlVersion)
	dir, err := filepath.Abs(i.dataDir())
	if err != nil {
		return nil, fmt.Errorf("karmada_data %s: %w", i.dataDir(), err)
	}
	config := filepath.Join(dir, "karmada-apiserver.config")
	out := tasks.Outputs{"kubeconfig": cty.StringVal(config), "karmada_data": cty.StringVal(dir)}
	if err := bin.checkVersion(ctx, env); err != nil {
		return nil, err
	}
	p, err := i.inspect(ctx, env, config)
	if err != nil {
		return nil, fmt.Errorf("karmadactl init in namespace %q: %w", i.namespace(), err)
	}
	if p.complete() && !p.tuneMissing {
		fmt.Fprintf(env.Stdout, "karmada control plane at %s already present (%s)\n", p.host, config)
		return out, nil
	}
	if p.complete() {
		if err := i.ensureTunes(ctx, env); err != nil {
			return nil, fmt.Errorf("karmadactl init in namespace %q: %w", i.namespace(), err)
		}
		return out, nil
	}
	if err := i.removeHalfDone(ctx, env, bin, p); err != nil {
		return nil, err
	}
	fmt.Fprintf(env.Stdout, "karmadactl init: installing the Karmada control plane in namespace %s\n", i.namespace())
	args := append(append([]string{"init"}, initFlags.args(i)...), i.ExtraArgs...)
	if bin.env, err = i.offlineEnv(); err != nil {
		return nil, fmt.Errorf("karmadactl init in namespace %q: %w", i.namespace(), err)
	}
	if _, _, err := bin.run(ctx, env, args, env.Stdout, env.Stderr); err != nil {
		return nil, fmt.Errorf("karmadactl init in namespace %q: %w", i.namespace(), err)
	}
	if _, err := os.Stat(config); err != nil {
		return nil, fmt.Errorf("karmadactl init in namespace %q: succeeded but left no kubeconfig: %w", i.namespace(), err)
	}
	if err := i.ensureTunes(ctx, env); err != nil {
		return nil, fmt.Errorf("karmadactl init in namespace %q: %w", i.namespace(), err)
	}
	return out, nil
}

// removeHalfDone removes the remains of an earlier attempt that karmadactl init
// cannot install over: when the host has the namespace but p is not complete, it
// runs karmadactl deinit --force and then removes etcd's data on this machine
// (hostPath mode). deinit_first = false skips both. A host without the namespace
// has nothing to remove (and deinit would fail on it), on a retry too.
func (i *Init) removeHalfDone(ctx context.Context, env *tasks.Env, bin binary, p plane) error {
	ns := i.namespace()
	if !p.namespace {
		if env.Attempt > 1 {
			fmt.Fprintf(env.Stdout, "karmadactl deinit: attempt %d, but the host has no namespace %s; nothing to remove\n", env.Attempt, ns)
		}
		return nil
	}
	what := strings.Join(p.missing, "; ")
	if i.DeinitFirst != nil && !*i.DeinitFirst {
		fmt.Fprintf(env.Stdout, "karmadactl init: half-done (%s); deinit_first is false, so installing over it\n", what)
		return nil
	}
	fmt.Fprintf(env.Stdout, "karmadactl init: half-done (%s); removing it and installing again\n", what)
	args := append([]string{"deinit", "--force"}, deinitFlags.args(i)...)
	for try := 1; ; try++ {
		stdout, stderr, err := bin.run(ctx, env, args, env.Stdout, env.Stderr)
		if err == nil {
			break
		}
		if try >= deinitTries || ctx.Err() != nil || !strings.Contains(stdout+stderr, objectModified) {
			return fmt.Errorf("karmadactl deinit in namespace %q before init: %w", ns, err)
		}
		fmt.Fprintf(env.Stdout, "karmadactl deinit lost a race on an object (Conflict); running it again (%d of %d)\n", try+1, deinitTries)
	}
	return i.removeEtcdData(env)
}

// deinit updates the host Node's labels, which the kubelet keeps updating too, with
// no retry of its own: a Conflict (objectModified) fails it halfway. deinit only
// removes, so it is run again, up to deinitTries times.
const (
	deinitTries    = 3
	objectModified = "the object has been modified; please apply your changes to the latest version"
)

// removeEtcdData removes etcd's data of a hostPath etcd, the member directory
// (etcd's own layout: DIR/member/snap and DIR/member/wal) in etcd_data on this
// machine, so that the next init's etcd starts empty instead of serving the
// half-done install's objects. It never removes etcd_data itself or anything
// else in it. Other storage modes keep nothing on this machine.
func (i *Init) removeEtcdData(env *tasks.Env) error {
	if i.EtcdStorageMode != "" && i.EtcdStorageMode != "hostPath" {
		return nil
	}
	dir := i.EtcdData
	if dir == "" {
		dir = defaultEtcdData
	}
	member := filepath.Join(dir, "member")
	if _, err := os.Lstat(member); errors.Is(err, os.ErrNotExist) {
		return nil
	} else if err != nil {
		return fmt.Errorf("etcd data: %w", err)
	}
	if err := os.RemoveAll(member); err != nil {
		return fmt.Errorf("etcd data: remove %s: %w", member, err)
	}
	fmt.Fprintf(env.Stdout, "karmadactl init: removed etcd's data %s\n", member)
	return nil
}

// closedProxy is a port on 127.0.0.1 nothing listens on (discard's): a request
// sent through it fails at once, and never leaves the machine.
const closedProxy = "http://127.0.0.1:9"

// offlineEnv is init's environment when internet_ip_lookup is false: karmadactl
// init always asks https://myexternalip.com/raw for the machine's internet address,
// so its HTTPS goes to closedProxy, except to the host cluster's API server,
// advertise_address and what NO_PROXY already exempts (Go's HTTP client never
// proxies loopback addresses anyway). Otherwise nil: the environment as it is.
func (i *Init) offlineEnv() (map[string]string, error) {
	if i.InternetIPLookup == nil || *i.InternetIPLookup {
		return nil, nil
	}
	cfg, err := kube.RESTConfig(i.Kubeconfig, i.Context)
	if err != nil {
		return nil, fmt.Errorf("host cluster: %w", err)
	}
	u, err := url.Parse(cfg.Host)
	if err != nil {
		return nil, fmt.Errorf("host cluster server %q: %w", cfg.Host, err)
	}
	noProxy := []string{u.Hostname(), i.AdvertiseAddress}
	for _, name := range []string{"NO_PROXY", "no_proxy"} {
		if v := os.Getenv(name); v != "" {
			noProxy = append(noProxy, v)
		}
	}
	np := strings.Join(noProxy, ",")
	return map[string]string{"HTTPS_PROXY": closedProxy, "https_proxy": closedProxy, "NO_PROXY": np, "no_proxy": np}, nil
}
