package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
)

// The resources k8s_job reads and writes. flow links no typed client (see
// cmd/flow's TestNoTypedKubernetesClient): Jobs and pods are read into the few
// fields this file declares.
var (
	jobsResource    = schema.GroupVersionResource{Group: "batch", Version: "v1", Resource: "jobs"}
	podsResource    = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	secretsResource = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
)

// jobNameLabel is the label the Job controller puts on a Job's pods.
const jobNameLabel = "batch.kubernetes.io/job-name"

// objectMeta is the metadata k8s_job reads.
type objectMeta struct {
	Name              string            `json:"name"`
	UID               string            `json:"uid"`
	Labels            map[string]string `json:"labels"`
	Annotations       map[string]string `json:"annotations"`
	CreationTimestamp time.Time         `json:"creationTimestamp"`
	DeletionTimestamp *time.Time        `json:"deletionTimestamp"`
}

// jobObject is what k8s_job reads of a Job.
type jobObject struct {
	Metadata objectMeta `json:"metadata"`
	Spec     struct {
		Completions *int `json:"completions"`
	} `json:"spec"`
	Status struct {
		Conditions []condition `json:"conditions"`
	} `json:"status"`
}

// condition is a Job's or a pod's condition.
type condition struct {
	Type               string    `json:"type"`
	Status             string    `json:"status"`
	Reason             string    `json:"reason"`
	Message            string    `json:"message"`
	LastTransitionTime time.Time `json:"lastTransitionTime"`
}

// conditionTrue reports whether the Job has condition t with status True, and it.
func (j *jobObject) conditionTrue(t string) (condition, bool) {
	for _, c := range j.Status.Conditions {
		if c.Type == t && c.Status == "True" {
			return c, true
		}
	}
	return condition{}, false
}

// podObject is what k8s_job reads of a pod.
type podObject struct {
	Metadata objectMeta `json:"metadata"`
	Spec     struct {
		NodeName string `json:"nodeName"`
	} `json:"spec"`
	Status struct {
		Phase             string            `json:"phase"`
		Conditions        []condition       `json:"conditions"`
		ContainerStatuses []containerStatus `json:"containerStatuses"`
	} `json:"status"`
}

type containerStatus struct {
	Name  string `json:"name"`
	Image string `json:"image"`
	State struct {
		Waiting *struct {
			Reason  string `json:"reason"`
			Message string `json:"message"`
		} `json:"waiting"`
		Running    *struct{} `json:"running"`
		Terminated *struct {
			ExitCode int    `json:"exitCode"`
			Reason   string `json:"reason"`
			Message  string `json:"message"`
		} `json:"terminated"`
	} `json:"state"`
}

// step is the step container's status in p, and whether p has one.
func (p *podObject) step() (containerStatus, bool) {
	for _, s := range p.Status.ContainerStatuses {
		if s.Name == containerName {
			return s, true
		}
	}
	return containerStatus{}, false
}

// succeeded reports whether p succeeded: its phase says so or, a second sooner (the
// kubelet's next relist), its one container, which is never restarted, exited 0.
func (p *podObject) succeeded() bool {
	if p.Status.Phase == "Succeeded" {
		return true
	}
	s, ok := p.step()
	return ok && p.Status.Phase != "Failed" && s.State.Terminated != nil && s.State.Terminated.ExitCode == 0
}

// fromUnstructured reads u into out, one of the types above.
func fromUnstructured(u *unstructured.Unstructured, out any) error {
	data, err := u.MarshalJSON()
	if err != nil {
		return err
	}
	return json.Unmarshal(data, out)
}

// cluster is one API server a Job runs in: the kubeconfig's, Karmada's, or a Karmada
// member's reached through the cluster proxy; with where its progress goes.
type cluster struct {
	cfg    *rest.Config
	dyn    dynamic.Interface
	logs   *http.Client
	name   string    // the member's name; "" for the kubeconfig's own cluster
	out    io.Writer // where pod logs and progress go, prefixed with name when set
	logger interface{ Debug(string, ...any) }
}

func newCluster(cfg *rest.Config, name string, out io.Writer, logger interface{ Debug(string, ...any) }) (*cluster, error) {
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", cfg.Host, err)
	}
	// Logs stream for as long as a pod runs: no client timeout.
	logCfg := rest.CopyConfig(cfg)
	logCfg.Timeout = 0
	hc, err := rest.HTTPClientFor(logCfg)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", cfg.Host, err)
	}
	return &cluster{cfg: cfg, dyn: dyn, logs: hc, name: name, out: out, logger: logger}, nil
}

// say prints one progress line for c.
func (c *cluster) say(format string, args ...any) {
	fmt.Fprintf(c.out, c.prefix()+format+"\n", args...)
}

// prefix is "" or "member2: ", for lines and errors about c.
func (c *cluster) prefix() string {
	if c.name == "" {
		return ""
	}
	return c.name + ": "
}

func (c *cluster) getJob(ctx context.Context, ns, name string) (*jobObject, error) {
	u, err := c.dyn.Resource(jobsResource).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	var job jobObject
	return &job, fromUnstructured(u, &job)
}

// jobNames are the names of the Jobs selector selects in ns.
func (c *cluster) names(ctx context.Context, gvr schema.GroupVersionResource, ns, selector string) ([]string, error) {
	list, err := c.dyn.Resource(gvr).Namespace(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, err
	}
	var names []string
	for _, item := range list.Items {
		names = append(names, item.GetName())
	}
	slices.Sort(names)
	return names, nil
}

// pods are the pods of the Job named job, oldest first.
func (c *cluster) pods(ctx context.Context, ns, job string) ([]podObject, error) {
	return c.podsSelected(ctx, ns, jobNameLabel+"="+job)
}

// podsSelected are the pods selector selects, oldest first.
func (c *cluster) podsSelected(ctx context.Context, ns, selector string) ([]podObject, error) {
	list, err := c.dyn.Resource(podsResource).Namespace(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, err
	}
	pods := make([]podObject, len(list.Items))
	for i := range list.Items {
		if err := fromUnstructured(&list.Items[i], &pods[i]); err != nil {
			return nil, err
		}
	}
	slices.SortStableFunc(pods, func(a, b podObject) int {
		if c := a.Metadata.CreationTimestamp.Compare(b.Metadata.CreationTimestamp); c != 0 {
			return c
		}
		return strings.Compare(a.Metadata.Name, b.Metadata.Name)
	})
	return pods, nil
}

// remove deletes one object (a Job with its pods: foreground); one that is gone is
// no error.
func (c *cluster) remove(ctx context.Context, gvr schema.GroupVersionResource, ns, name string) error {
	fg := metav1.DeletePropagationForeground
	err := c.dyn.Resource(gvr).Namespace(ns).Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &fg})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("%sdelete %s %s/%s: %w", c.prefix(), kindOf(gvr), ns, name, err)
	}
	return nil
}

func kindOf(gvr schema.GroupVersionResource) string {
	switch gvr {
	case jobsResource:
		return "Job"
	case secretsResource:
		return "Secret"
	case podsResource:
		return "pod"
	case policyResource:
		return "PropagationPolicy"
	}
	return gvr.Resource
}

// annotate sets one annotation of the Job named name.
func (c *cluster) annotate(ctx context.Context, ns, name, key, value string) error {
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{key: value}}})
	_, err := c.dyn.Resource(jobsResource).Namespace(ns).Patch(ctx, name, "application/merge-patch+json", patch, metav1.PatchOptions{})
	return err
}

// watch sends on wake, without blocking, whenever an object opts selects in ns
// changes, until ctx ends; a watch that fails or ends is started again. A missed
// wake-up costs only latency: the follower also looks at a steady tick.
func (c *cluster) watch(ctx context.Context, gvr schema.GroupVersionResource, ns string, opts metav1.ListOptions, wake chan<- struct{}) {
	for ctx.Err() == nil {
		w, err := c.dyn.Resource(gvr).Namespace(ns).Watch(ctx, opts)
		if err != nil {
			c.logger.Debug("watch", "resource", gvr.Resource, "error", err)
			select {
			case <-ctx.Done():
			case <-time.After(2 * time.Second):
			}
			continue
		}
		for range w.ResultChan() {
			select {
			case wake <- struct{}{}:
			default:
			}
		}
		w.Stop()
	}
}

// podLog opens the step container's log of pod, following it.
func (c *cluster) podLog(ctx context.Context, ns, pod string) (io.ReadCloser, error) {
	u := strings.TrimRight(c.cfg.Host, "/") + "/api/v1/namespaces/" + url.PathEscape(ns) + "/pods/" + url.PathEscape(pod) +
		"/log?container=" + containerName + "&follow=true"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.logs.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		resp.Body.Close()
		return nil, fmt.Errorf("%s: %s", resp.Status, strings.TrimSpace(string(body)))
	}
	return resp.Body, nil
}

// stopGrace is how long a pod of a Job flow deletes has to end after SIGTERM: the
// step is being stopped (Ctrl-C, a timeout, an undo), and a shell as the
// container's first process ignores SIGTERM, which would hold it the pod's 30s.
const stopGrace = 2

// stopPods deletes the pods of the Job named name, giving each stopGrace seconds.
// Called before the Job's own deletion: the garbage collector deletes a Job's pods
// with their full grace period, which a kubelet does not shorten once it started.
func (c *cluster) stopPods(ctx context.Context, ns, name string) {
	grace := int64(stopGrace)
	pods, _ := c.pods(ctx, ns, name)
	for _, p := range pods {
		_ = c.dyn.Resource(podsResource).Namespace(ns).Delete(ctx, p.Metadata.Name, metav1.DeleteOptions{GracePeriodSeconds: &grace})
	}
}

// waitGone deletes the pods of the Job named name, giving each stopGrace seconds
// (shortening the 30s the garbage collector's deletion gives them), and waits until
// the Job and its pods are gone from c; the Job's deletion was asked for already.
func (c *cluster) waitGone(ctx context.Context, ns, name string) error {
	return c.waitUntilGone(ctx, ns, name, jobNameLabel+"="+name)
}

// waitPodsGone deletes the pods selector selects, giving each stopGrace seconds, and
// waits until they are gone from c: the pods of Jobs that are gone already.
func (c *cluster) waitPodsGone(ctx context.Context, ns, selector string) error {
	return c.waitUntilGone(ctx, ns, "", selector)
}

// waitUntilGone deletes the pods selector selects, each once, and waits until they and
// the Job named job (none when job is "") are gone from c.
func (c *cluster) waitUntilGone(ctx context.Context, ns, job, selector string) error {
	grace := int64(stopGrace)
	asked := map[string]bool{}
	for {
		jobGone := true
		if job != "" {
			_, jerr := c.getJob(ctx, ns, job)
			jobGone = apierrors.IsNotFound(jerr)
		}
		pods, err := c.podsSelected(ctx, ns, selector)
		if jobGone && err == nil && len(pods) == 0 {
			return nil
		}
		for _, p := range pods {
			if !asked[p.Metadata.UID] {
				asked[p.Metadata.UID] = true
				_ = c.dyn.Resource(podsResource).Namespace(ns).Delete(ctx, p.Metadata.Name, metav1.DeleteOptions{GracePeriodSeconds: &grace})
			}
		}
		select {
		case <-ctx.Done():
			if job == "" {
				return fmt.Errorf("%swait until the pods %s in %s are gone: %w", c.prefix(), selector, ns, ctx.Err())
			}
			return fmt.Errorf("%swait until Job %s/%s is gone: %w", c.prefix(), ns, job, ctx.Err())
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// toUnstructured is obj (a map built by k8s_job) as an object to create.
func toUnstructured(obj map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: obj}
}
