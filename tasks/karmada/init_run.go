package karmada

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/flowdev/flow/tasks"
	"github.com/flowdev/flow/tasks/kube"
	"github.com/zclconf/go-cty/cty"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// readyzTimeout bounds the health check of an existing Karmada API server, so an
// unreachable one costs seconds, not a TCP timeout.
const readyzTimeout = 5 * time.Second

var namespaceResource = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}

// Run skips a healthy control plane, removes a half-done one, then runs karmadactl init.
func (i *Init) Run(ctx context.Context, env *tasks.Env) (tasks.Outputs, error) {
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
	if host, ok := healthyAPIServer(ctx, config); ok {
		fmt.Fprintf(env.Stdout, "karmada control plane at %s already present (%s)\n", host, config)
		return out, nil
	}
	if err := i.deinitIfHalfDone(ctx, env, bin); err != nil {
		return nil, err
	}
	fmt.Fprintf(env.Stdout, "karmadactl init: installing the Karmada control plane in namespace %s\n", i.namespace())
	args := append(append([]string{"init"}, initFlags.args(i)...), i.ExtraArgs...)
	if _, _, err := bin.run(ctx, env, args, env.Stdout, env.Stderr); err != nil {
		return nil, fmt.Errorf("karmadactl init in namespace %q: %w", i.namespace(), err)
	}
	if _, err := os.Stat(config); err != nil {
		return nil, fmt.Errorf("karmadactl init in namespace %q: succeeded but left no kubeconfig: %w", i.namespace(), err)
	}
	return out, nil
}

// deinitIfHalfDone runs karmadactl deinit when the host has the namespace but, as
// Run found, no healthy Karmada API server: the remains of an earlier attempt
// that karmadactl init cannot install over. On a retry without the namespace
// there is nothing to remove (and deinit would fail on the missing namespace).
func (i *Init) deinitIfHalfDone(ctx context.Context, env *tasks.Env, bin binary) error {
	if i.DeinitFirst != nil && !*i.DeinitFirst {
		return nil
	}
	ns := i.namespace()
	present, err := i.namespacePresent(ctx)
	if err != nil {
		return err
	}
	var reason string
	switch {
	case present && env.Attempt > 1:
		reason = fmt.Sprintf("attempt %d", env.Attempt)
	case present:
		reason = fmt.Sprintf("namespace %s exists but no healthy Karmada API server answers", ns)
	case env.Attempt > 1:
		fmt.Fprintf(env.Stdout, "karmadactl deinit: attempt %d, but the host has no namespace %s; nothing to remove\n", env.Attempt, ns)
		return nil
	default:
		return nil
	}
	fmt.Fprintf(env.Stdout, "karmadactl deinit: %s; removing the half-done control plane first\n", reason)
	args := append([]string{"deinit", "--force"}, deinitFlags.args(i)...)
	if _, _, err := bin.run(ctx, env, args, env.Stdout, env.Stderr); err != nil {
		return fmt.Errorf("karmadactl deinit in namespace %q before init: %w", ns, err)
	}
	return nil
}

// namespacePresent reports whether the host cluster has the init's namespace.
func (i *Init) namespacePresent(ctx context.Context) (bool, error) {
	ns := i.namespace()
	cfg, err := kube.RESTConfig(i.Kubeconfig, i.Context)
	if err != nil {
		return false, fmt.Errorf("host cluster: %w", err)
	}
	client, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return false, fmt.Errorf("host cluster %s: %w", cfg.Host, err)
	}
	_, err = client.Resource(namespaceResource).Get(ctx, ns, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("host cluster %s: get namespace %q: %w", cfg.Host, ns, err)
	}
	return true, nil
}

// healthyAPIServer reports whether kubeconfig exists and the API server it points
// at answers /readyz with ok, and returns that server's address.
func healthyAPIServer(ctx context.Context, kubeconfig string) (string, bool) {
	if _, err := os.Stat(kubeconfig); err != nil {
		return "", false
	}
	cfg, err := kube.RESTConfig(kubeconfig, "")
	if err != nil {
		return "", false
	}
	cfg.Timeout = readyzTimeout
	client, err := kube.RawClient(cfg)
	if err != nil {
		return "", false
	}
	body, err := client.Get().AbsPath("/readyz").DoRaw(ctx)
	return cfg.Host, err == nil && string(body) == "ok"
}
