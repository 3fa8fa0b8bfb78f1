package karmada

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/flowdev/flow/tasks"
	"github.com/flowdev/flow/tasks/kube"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// The workloads karmadactl v1.13 init creates in its namespace on the host
// (pkg/karmadactl/cmdinit/kubernetes: deployments.go, statefulset.go).
var (
	planeDeployments = []string{
		"karmada-apiserver", "karmada-aggregated-apiserver", "kube-controller-manager",
		controllerManagerDeployment, "karmada-scheduler", "karmada-webhook",
	}
	planeStatefulSets = []string{"etcd"}
)

// controllerManagerDeployment is the Deployment controller_manager_args go into.
const controllerManagerDeployment = "karmada-controller-manager"

var statefulSetResource = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "statefulsets"}

// plane is what Run found of a control plane.
type plane struct {
	host      string   // the Karmada API server's address, when its kubeconfig loads
	namespace bool     // the host cluster has the namespace
	missing   []string // what keeps the control plane from being complete, "" if nothing
	// tuneMissing is set when the control plane is otherwise complete but one
	// of its Deployments lacks its tune (controller_manager_args, host_network).
	tuneMissing bool
}

// complete reports whether nothing is missing, the tunes aside.
func (p plane) complete() bool { return len(p.missing) == 0 }

// inspect finds out how much of the control plane exists: the Karmada kubeconfig,
// its API server's /readyz, every Deployment and StatefulSet in the host namespace
// fully ready and the expected ones present, and the cluster API (served by
// karmada-aggregated-apiserver) answering. Only a host cluster that cannot be
// asked is an error; everything else is a missing part.
func (i *Init) inspect(ctx context.Context, env *tasks.Env, config string) (plane, error) {
	var p plane
	host, err := i.hostClient()
	if err != nil {
		return p, err
	}
	if p.namespace, err = namespacePresent(ctx, env, host, i.namespace()); err != nil {
		return p, err
	}
	p.host, p.missing = karmadaAPIMissing(ctx, config)
	if !p.namespace {
		p.missing = append(p.missing, "no namespace "+i.namespace()+" on the host")
		return p, nil
	}
	workloads, deployments, err := workloadsMissing(ctx, env, host, i.namespace())
	if err != nil {
		return p, err
	}
	p.missing = append(p.missing, workloads...)
	for name, t := range i.tunes() {
		if d := deployments[name]; d != nil && t.lacks(d) {
			p.tuneMissing = p.complete()
		}
	}
	return p, nil
}

// hostClient is a dynamic client for the host cluster.
func (i *Init) hostClient() (*dynamic.DynamicClient, error) {
	client, _, err := kube.DynamicClient(i.Kubeconfig, i.Context)
	if err != nil {
		return nil, fmt.Errorf("host cluster: %w", err)
	}
	return client, nil
}

// namespacePresent reports whether the host cluster has namespace ns.
func namespacePresent(ctx context.Context, env *tasks.Env, host dynamic.Interface, ns string) (bool, error) {
	_, err := tasks.RetryTransient(ctx, env, kube.TransientFault, func() (*unstructured.Unstructured, error) {
		return host.Resource(namespaceResource).Get(ctx, ns, metav1.GetOptions{})
	})
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("host cluster: get namespace %q: %w", ns, err)
	}
	return true, nil
}

// karmadaAPIMissing checks the Karmada side through kubeconfig: that it exists,
// that its API server answers /readyz with ok, and that it serves the cluster API
// (clusters.cluster.karmada.io, which karmada-aggregated-apiserver backs). It
// returns the server's address (when the kubeconfig loads) and what is missing.
func karmadaAPIMissing(ctx context.Context, kubeconfig string) (string, []string) {
	if _, err := os.Stat(kubeconfig); err != nil {
		return "", []string{"no kubeconfig " + kubeconfig}
	}
	cfg, err := kube.RESTConfig(kubeconfig, "")
	if err != nil {
		return "", []string{fmt.Sprintf("karmada kubeconfig: %v", err)}
	}
	cfg.Timeout = readyzTimeout
	raw, err := kube.RawClient(cfg)
	if err != nil {
		return cfg.Host, []string{fmt.Sprintf("karmada API server %s: %v", cfg.Host, err)}
	}
	body, err := raw.Get().AbsPath("/readyz").DoRaw(ctx)
	if err != nil || string(body) != "ok" {
		return cfg.Host, []string{fmt.Sprintf("karmada API server %s not ready: %s", cfg.Host, readyzProblem(body, err))}
	}
	client, err := dynamic.NewForConfig(cfg)
	if err == nil {
		_, err = client.Resource(clusters).List(ctx, metav1.ListOptions{Limit: 1})
	}
	if err != nil {
		return cfg.Host, []string{fmt.Sprintf("cluster API: %v", err)}
	}
	return cfg.Host, nil
}

// readyzProblem words a failed /readyz: the error, or the body's first line.
func readyzProblem(body []byte, err error) string {
	if err != nil {
		return err.Error()
	}
	line, _, _ := strings.Cut(strings.TrimSpace(string(body)), "\n")
	return fmt.Sprintf("/readyz answered %q", line)
}

// workloadsMissing lists what is missing of the host namespace's workloads: each
// expected Deployment and StatefulSet that is absent, and each one present that
// is not fully ready. It returns the Deployments it found too, by name.
func workloadsMissing(ctx context.Context, env *tasks.Env, host dynamic.Interface, ns string) ([]string, map[string]*unstructured.Unstructured, error) {
	var missing []string
	deployments := map[string]*unstructured.Unstructured{}
	for _, w := range []struct {
		kind     string
		resource schema.GroupVersionResource
		expected []string
	}{
		{"deployment", deploymentResource, planeDeployments},
		{"statefulset", statefulSetResource, planeStatefulSets},
	} {
		list, err := tasks.RetryTransient(ctx, env, kube.TransientFault, func() (*unstructured.UnstructuredList, error) {
			return host.Resource(w.resource).Namespace(ns).List(ctx, metav1.ListOptions{})
		})
		if err != nil {
			return nil, nil, fmt.Errorf("host cluster: list %ss in %s: %w", w.kind, ns, err)
		}
		present := map[string]bool{}
		for _, obj := range list.Items {
			present[obj.GetName()] = true
			if problem := notReady(&obj); problem != "" {
				missing = append(missing, w.kind+" "+obj.GetName()+" "+problem)
			}
			if w.kind == "deployment" {
				deployments[obj.GetName()] = &obj
			}
		}
		for _, name := range w.expected {
			if !present[name] {
				missing = append(missing, w.kind+" "+name+" absent")
			}
		}
	}
	return missing, deployments, nil
}

// notReady words why a Deployment or StatefulSet is not fully ready
// (status.readyReplicas == spec.replicas, status.observedGeneration >=
// metadata.generation), or returns "".
func notReady(obj *unstructured.Unstructured) string {
	want := specReplicas(obj)
	ready, _, _ := unstructured.NestedInt64(obj.Object, "status", "readyReplicas")
	observed, _, _ := unstructured.NestedInt64(obj.Object, "status", "observedGeneration")
	switch {
	case observed < obj.GetGeneration():
		return fmt.Sprintf("generation %d not yet observed", obj.GetGeneration())
	case ready != want:
		return fmt.Sprintf("%d/%d ready", ready, want)
	}
	return ""
}

// specReplicas is spec.replicas, 1 when unset as the API server defaults it.
func specReplicas(obj *unstructured.Unstructured) int64 {
	n, found, _ := unstructured.NestedInt64(obj.Object, "spec", "replicas")
	if !found {
		return 1
	}
	return n
}

// containerCommand is the command of a workload's first container.
func containerCommand(obj *unstructured.Unstructured) []string {
	containers, _, _ := unstructured.NestedSlice(obj.Object, "spec", "template", "spec", "containers")
	if len(containers) == 0 {
		return nil
	}
	c, _ := containers[0].(map[string]any)
	cmd, _, _ := unstructured.NestedStringSlice(c, "command")
	return cmd
}

// withArgs returns cmd with each of args in place, an argument replacing the one
// of the same --name (as --name=VALUE or a bare --name), or nil when cmd already
// holds every one of args.
func withArgs(cmd, args []string) []string {
	out := slices.Clone(cmd)
	changed := false
	for _, arg := range args {
		if slices.Contains(out, arg) {
			continue
		}
		changed = true
		name, _, _ := strings.Cut(arg, "=")
		at := slices.IndexFunc(out, func(a string) bool { return a == name || strings.HasPrefix(a, name+"=") })
		if at < 0 {
			out = append(out, arg)
			continue
		}
		out[at] = arg
	}
	if !changed {
		return nil
	}
	return out
}

// errNoCommand is the error of a karmada-controller-manager without a command
// to add arguments to.
var errNoCommand = errors.New("its first container has no command")
