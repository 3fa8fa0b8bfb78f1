// Package kube holds the Kubernetes task types (kubeconfig, k8s_apply) and the
// connection every Kubernetes-facing task shares: a kubeconfig file and an
// optional context, resolved as kubectl resolves them. It does not start API
// servers (see kubetest) or wait for readiness (see tasks/wait).
package kube

import (
	"errors"
	"fmt"
	"strings"

	"github.com/flowdev/flow/tasks"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// KubeconfigDoc and ContextDoc document the connection attributes of every
// Kubernetes task, so the reference pages say the same thing.
const (
	KubeconfigDoc = "Path of the kubeconfig file; default $KUBECONFIG, then ~/.kube/config, as kubectl."
	ContextDoc    = "Context in the kubeconfig to use; default its current-context."
)

// RESTConfig loads the client configuration for kubeconfig (a path; "" means
// kubectl's default rules) and context ("" means the current context). Errors
// name the file and the context. Credentials stay in the returned config and
// never in errors.
func RESTConfig(kubeconfig, context string) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if kubeconfig != "" {
		rules.ExplicitPath = kubeconfig
	}
	overrides := &clientcmd.ConfigOverrides{CurrentContext: context}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides).ClientConfig()
	if err != nil {
		// A parse error may quote the file, which holds credentials, after
		// naming it again.
		err = errors.New(strings.TrimPrefix(parseError(err).Error(), `error loading config file "`+kubeconfig+`": `))
		where := kubeconfig
		if where == "" {
			where = "the default kubeconfig"
		}
		if context != "" {
			return nil, fmt.Errorf("load %s (context %q): %w", where, context, err)
		}
		return nil, fmt.Errorf("load %s: %w", where, err)
	}
	// Long waits poll; a client-side rate limit would only slow them.
	cfg.QPS, cfg.Burst = 50, 100
	return cfg, nil
}

// DynamicClient is a dynamic client for the cluster that kubeconfig and context name
// (resolved as RESTConfig does), and the server's address, for messages.
func DynamicClient(kubeconfig, context string) (*dynamic.DynamicClient, string, error) {
	cfg, err := RESTConfig(kubeconfig, context)
	if err != nil {
		return nil, "", err
	}
	client, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", cfg.Host, err)
	}
	return client, cfg.Host, nil
}

// TransientFault classifies the errors of Kubernetes API requests for
// tasks.RetryTransient: tasks.TransientFault's network faults, and the answers of
// a server that is starting, overloaded or briefly broken (429, 5xx, server-side
// timeouts). Not found, forbidden, invalid and conflicts are not transient.
func TransientFault(err error) string {
	var status apierrors.APIStatus
	switch {
	case err == nil:
		return ""
	case apierrors.IsTooManyRequests(err):
		return "429 too many requests"
	case apierrors.IsServerTimeout(err), apierrors.IsTimeout(err):
		return "server timeout"
	case errors.As(err, &status) && status.Status().Code >= 500:
		return fmt.Sprintf("server error %d", status.Status().Code)
	}
	return tasks.TransientFault(err)
}
