package wait

import (
	"context"
	"fmt"
	"maps"
	"math"
	"time"

	"github.com/zclconf/go-cty/cty"

	"github.com/flowdev/flow/tasks"
)

// WaitReady polls one thing until it is ready. It is the hcl config struct of the
// wait_ready task type. Attributes after kind belong to one kind each (see kinds);
// interval, wait_timeout and request_timeout are shared by all kinds.
type WaitReady struct {
	Kind             string            `hcl:"kind" doc:"What to wait for: \"tcp\", \"http\", \"kube_api\", \"nodes\", \"deployment\", \"pods\", \"karmada_clusters\", \"karmada_placement\" or \"condition\"."`
	Address          string            `hcl:"address,optional" doc:"tcp: host:port to connect to. Required for kind tcp."`
	URL              string            `hcl:"url,optional" doc:"http: http:// or https:// URL to GET. Required for kind http."`
	ExpectStatus     []int             `hcl:"expect_status,optional" doc:"http: status codes that count as ready; default [200]."`
	BodyMatch        string            `hcl:"body_match,optional" doc:"http: regular expression (RE2 syntax) the first 64 KiB of the body must match."`
	Insecure         *bool             `hcl:"insecure,optional" doc:"http: skip TLS certificate verification; default false."`
	CAFile           string            `hcl:"ca_file,optional" doc:"http: PEM file of CA certificates to trust instead of the system's, for self-signed servers."`
	Headers          map[string]string `hcl:"headers,optional" doc:"http: request headers; Host sets the virtual host."`
	Kubeconfig       string            `hcl:"kubeconfig,optional" doc:"Kubernetes kinds: path of the kubeconfig file; default $KUBECONFIG, then ~/.kube/config, as kubectl."`
	Context          string            `hcl:"context,optional" doc:"Kubernetes kinds: context in the kubeconfig to use; default its current-context."`
	Name             string            `hcl:"name,optional" doc:"deployment, condition, karmada_placement: name of the object (karmada_placement: of the ResourceBinding, NAME-KIND lowercased such as \"nginx-deployment\"). Required for these kinds."`
	Namespace        string            `hcl:"namespace,optional" doc:"deployment, pods, condition, karmada_placement: namespace of the objects; default \"default\" (condition: unset for cluster-scoped kinds)."`
	Selector         string            `hcl:"selector,optional" doc:"pods: label selector such as \"app=prometheus,tier!=cache\"; default every pod in namespace."`
	MinCount         *int              `hcl:"min_count,optional" doc:"nodes, pods: fewest objects that must exist, all ready; default 1."`
	Clusters         []string          `hcl:"clusters,optional" doc:"karmada_clusters: names of the Karmada Cluster objects that must be Ready. Required for that kind."`
	PlacementPresent []string          `hcl:"placement_present,optional" doc:"karmada_placement: clusters that must hold the resource: in the binding's spec.clusters with replicas above 0 (any, for a resource without replicas)."`
	PlacementAbsent  []string          `hcl:"placement_absent,optional" doc:"karmada_placement: clusters that must not hold it: missing from spec.clusters (or, for a resource with replicas, listed with 0) and not being evicted from (spec.gracefulEvictionTasks: the old replicas run there until the new ones are healthy). One of the two lists must name a cluster."`
	APIVersion       string            `hcl:"api_version,optional" doc:"condition: API version of the object, such as \"apps/v1\" or \"work.karmada.io/v1alpha2\". Required for that kind."`
	ObjectKind       string            `hcl:"object_kind,optional" doc:"condition: kind of the object, such as \"Deployment\" or \"ResourceBinding\". Required for that kind."`
	Condition        string            `hcl:"condition,optional" doc:"condition: type of the status condition, such as \"Ready\" or \"Scheduled\". Required for that kind."`
	ConditionStatus  string            `hcl:"condition_status,optional" doc:"condition: status the condition must have: \"True\", \"False\" or \"Unknown\"; default \"True\"."`
	Interval         tasks.Duration    `hcl:"interval,optional" doc:"Time from the start of one check to the start of the next; default \"1s\"."`
	WaitTimeout      tasks.Duration    `hcl:"wait_timeout,optional" doc:"How long to wait before failing with the last observed state; default \"5m\"."`
	RequestTimeout   tasks.Duration    `hcl:"request_timeout,optional" doc:"Longest one check may take; default \"5s\"."`
}

// Register adds the wait_ready task type to r.
func Register(r *tasks.Registry) error { return r.Add(waitType) }

// waitType is the wait_ready task type.
func waitType() tasks.Type {
	return tasks.Type{
		Name:    "wait_ready",
		Summary: "Wait until a port, an HTTP endpoint or Kubernetes objects are ready",
		Doc: `Checks something every interval until it is ready, then succeeds. The kind says what:

  tcp               a connection to address succeeds
  http              a GET of url answers with a status in expect_status and, if
                    body_match is set, a body that matches it (redirects followed; TLS
                    verified unless insecure is true; ca_file replaces the system's CAs)
  kube_api          the API server's /readyz answers 200 "ok"
  nodes             at least min_count Nodes exist and all are Ready
  deployment        Deployment name in namespace has rolled out: the latest generation
                    observed, all spec.replicas updated and available
  pods              at least min_count pods in namespace match selector and all are
                    Running and Ready with an IP
  karmada_clusters  every Karmada Cluster in clusters exists and is Ready
  karmada_placement the Karmada ResourceBinding name in namespace is scheduled
                    (spec.clusters is not empty) to every cluster in
                    placement_present and to none in placement_absent
  condition         object api_version/object_kind name (in namespace) has status
                    condition "condition" with status condition_status

Kubernetes kinds connect through kubeconfig and context, as kubectl does. An
unreachable or failing API server is not ready yet; a kubeconfig or context that
cannot be loaded ends the wait at once.

A line is printed when waiting starts, every 10 s while it lasts (with the last
observed state) and when the thing is ready. After wait_timeout the task fails,
naming the last observed state. wait_timeout is the wait's own deadline; the engine's
timeout setting, if shorter, cancels the task earlier.`,
		New: func() tasks.Task { return &WaitReady{} },
		Outputs: []tasks.Output{
			{Name: "elapsed", Type: cty.Number, Doc: "Seconds from the start of the wait until the thing was ready."},
			{Name: "status", Type: cty.Number, Doc: "http: status code of the response that was ready."},
			{Name: "body", Type: cty.String, Doc: "http: body of the response that was ready, trimmed of surrounding whitespace, first 64 KiB."},
			{Name: "nodes", Type: cty.List(cty.String), Doc: "nodes: names of the Nodes, sorted."},
			{Name: "pods", Type: cty.List(podObject), Doc: "pods: the matching pods by name, each an object {name, ip}."},
			{Name: "pod_ips", Type: cty.List(cty.String), Doc: "pods: IPs of the matching pods, in the order of pods."},
			{Name: "clusters", Type: cty.List(cty.String), Doc: "karmada_clusters: the names in clusters, all Ready."},
			{Name: "placement", Type: cty.Map(cty.Number), Doc: "karmada_placement: the binding's spec.clusters that satisfied the wait, cluster name to replicas (0 for a resource without replicas)."},
		},
		Undo: tasks.UndoNothing,
		Example: `task "wait_ready" "prometheus" {
  kind         = "pods"
  kubeconfig   = "seed.kubeconfig"
  namespace    = "monitoring"
  selector     = "app.kubernetes.io/name=prometheus"
  interval     = "2s"
  wait_timeout = "10m"
}`,
	}
}

// Validate checks the kind, that the kind's required attributes are set and no other
// kind's attributes are, that durations parse, and the kind's own rules.
func (w *WaitReady) Validate() error {
	k, ok := kinds[w.Kind]
	if !ok {
		return &tasks.AttrError{Attr: "kind", Err: fmt.Errorf("unknown kind %q; want one of %s", w.Kind, kindNames())}
	}
	if err := w.checkPresence(k); err != nil {
		return err
	}
	if _, err := w.timing(); err != nil {
		return err
	}
	return k.validate(w)
}

// Run polls until the thing is ready, wait_timeout passes or ctx is cancelled.
func (w *WaitReady) Run(ctx context.Context, env *tasks.Env) (tasks.Outputs, error) {
	if err := w.Validate(); err != nil {
		return nil, err
	}
	k := kinds[w.Kind]
	t, _ := w.timing()
	what := k.what(w)
	p, err := k.newProbe(w.in(env))
	if err != nil {
		return nil, fmt.Errorf("wait for %s: %w", what, err)
	}
	elapsed, err := poll(ctx, env, what, p, t)
	if err != nil {
		return nil, err
	}
	out := tasks.Outputs{"elapsed": cty.NumberFloatVal(math.Round(elapsed.Seconds()*1000) / 1000)}
	if o, ok := p.(outputter); ok {
		maps.Copy(out, o.outputs())
	}
	return out, nil
}

// timing holds the parsed durations shared by every kind.
type timing struct {
	interval, wait, request time.Duration
}

func (w *WaitReady) timing() (timing, error) {
	var t timing
	var err error
	if t.interval, err = w.Interval.Positive("interval", time.Second); err != nil {
		return t, err
	}
	if t.wait, err = w.WaitTimeout.Positive("wait_timeout", 5*time.Minute); err != nil {
		return t, err
	}
	t.request, err = w.RequestTimeout.Positive("request_timeout", 5*time.Second)
	return t, err
}

// in returns w with its relative paths (kubeconfig, ca_file) taken from env's
// directory (tasks.Env.Dir); messages keep naming them as the flow does.
func (w *WaitReady) in(env *tasks.Env) *WaitReady {
	cp := *w
	cp.Kubeconfig, cp.CAFile = env.InDir(w.Kubeconfig), env.InDir(w.CAFile)
	return &cp
}

func (w *WaitReady) insecure() bool { return w.Insecure != nil && *w.Insecure }

var _ tasks.Task = (*WaitReady)(nil)
