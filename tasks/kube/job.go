package kube

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/zclconf/go-cty/cty"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/flowdev/flow/tasks"
)

// Job runs one container as a Kubernetes Job and waits until it completed: in the
// cluster its kubeconfig names or, with clusters or cluster_labels, in the member
// clusters Karmada propagates it to. It is the hcl config struct of the k8s_job task
// type.
//
// The Job's name is derived from the state's lineage, the instance address and the
// rendered inputs (jobName), so a run after a crash finds the Job it started and
// adopts it instead of starting a second one, and a changed step gets a new Job.
type Job struct {
	Image          string                       `hcl:"image" doc:"Container image to run, e.g. \"localhost:32000/busybox:1.36\"."`
	Command        []string                     `hcl:"command,optional" doc:"Entrypoint, as the container's command; default the image's."`
	Args           []string                     `hcl:"args,optional" doc:"Arguments, as the container's args."`
	Env            map[string]string            `hcl:"env,optional" doc:"Environment variables of the container. A value derived from a sensitive variable goes into a Secret the Job references; it never appears in the Job's spec, flow's output or its state."`
	Namespace      string                       `hcl:"namespace,optional" doc:"Namespace of the Job; default \"default\". It must exist."`
	Resources      map[string]map[string]string `hcl:"resources,optional" doc:"Container resources as {requests = {cpu = \"100m\", memory = \"64Mi\"}, limits = {...}}."`
	BackoffLimit   *int                         `hcl:"backoff_limit,optional" doc:"Pods the Job retries after a failed one before it fails; default 0. Each new pod prints as a new try."`
	ActiveDeadline tasks.Duration               `hcl:"active_deadline,optional" doc:"The Job's activeDeadlineSeconds: Kubernetes fails it (DeadlineExceeded) when it runs longer. flow's own timeout meta-argument instead stops the step and deletes the Job."`
	Parallelism    *int                         `hcl:"parallelism,optional" doc:"Pods run at once (the Job's parallelism and completions); default 1. With divide_replicas, Karmada divides them among the members."`
	NodeSelector   map[string]string            `hcl:"node_selector,optional" doc:"Labels a node must have to run the pod."`
	ServiceAccount string                       `hcl:"service_account,optional" doc:"Service account the pod runs as; default the namespace's default."`
	Labels         map[string]string            `hcl:"labels,optional" doc:"Further labels of the Job and its pods."`
	Clusters       []string                     `hcl:"clusters,optional" doc:"Karmada: the kubeconfig is Karmada's API server, and the Job is propagated to these member clusters by a PropagationPolicy of the same name. The step succeeds when every selected member's Job completed."`
	ClusterLabels  map[string]string            `hcl:"cluster_labels,optional" doc:"Karmada: propagate to the member clusters with these labels (with clusters: both must match)."`
	DivideReplicas bool                         `hcl:"divide_replicas,optional" doc:"Karmada: divide parallelism among the selected members (replica scheduling Divided, equal weights) instead of running it whole in each; default false."`
	Kubeconfig     string                       `hcl:"kubeconfig,optional" doc:"Path of the kubeconfig file; default $KUBECONFIG, then ~/.kube/config, as kubectl."`
	Context        string                       `hcl:"context,optional" doc:"Context in the kubeconfig to use; default its current-context."`

	sensitiveEnv map[string]bool // env keys whose value derives from a sensitive variable (SetSensitive)
	// unschedulable is how long a pod may stay unschedulable before the step fails
	// with the scheduler's message: a node that is briefly not ready should not fail it.
	unschedulable time.Duration
}

// Labels every Job flow creates carries: the instance (a hash of the state's lineage
// and the address, so Destroy finds every Job the instance made) and which step.
const (
	labelInstance = "flow.dev/instance"
	labelStep     = "flow.dev/step"
	// annotationAddress holds the instance address itself; labels cannot.
	annotationAddress = "flow.dev/address"
	// annotationReported marks a failed Job whose failure a run already reported: a
	// later attempt starts it again instead of adopting it.
	annotationReported   = "flow.dev/reported"
	containerName        = "step"
	defaultUnschedulable = 30 * time.Second
)

// jobOutputs is what the step hands on, in one cluster; karmada_job's members map
// holds one per member.
var memberOutputType = cty.Object(map[string]cty.Type{
	"exit_code": cty.Number,
	"node":      cty.String,
	"pod":       cty.String,
	"outputs":   cty.Map(cty.String),
})

func jobType() tasks.Type {
	return tasks.Type{
		Name:    "k8s_job",
		Summary: "Run a container as a Kubernetes Job, in one cluster or fanned out by Karmada",
		Doc: `Creates a Job that runs image once (parallelism pods at once, default 1) with
restartPolicy Never, and waits until it completed. Each pod's log streams into flow's
output as it runs, prefixed with the address (and the member cluster with Karmada), and
is kept for flow logs; a pod the Job starts again after a failed one prints as a new try.

The Job is named flow-NAME-HASH: HASH derives from the state, the instance address and
the rendered inputs. A run after flow was killed finds the Job it started, running or
finished, and adopts it: it never creates a second one. A changed step gets a new Job,
and the instance's older Jobs are deleted.

The container's termination message (written to /dev/termination-log), parsed as a JSON
object, becomes the outputs map; a value that is not a string is kept as JSON text.

A failure says why: the exit code and the last log lines, or the pod's reason
(ImagePullBackOff with the image, OOMKilled, DeadlineExceeded, Unschedulable with the
scheduler's message, after 30s).

With clusters or cluster_labels, kubeconfig names Karmada's API server: the Job (and the
Secret of a sensitive env value) is created there with a PropagationPolicy, each selected
member's Job is followed through Karmada's cluster proxy, and the step succeeds when every
member's Job completed; the members output holds each member's results, and a failure
names each member that failed with its reason.

Ctrl-C and flow's timeout delete the Job with its pods (in every member).`,
		New: func() tasks.Task { return &Job{} },
		Outputs: []tasks.Output{
			{Name: "job", Type: cty.String, Clean: true, Doc: "The Job's name."},
			{Name: "namespace", Type: cty.String, Clean: true, Doc: "The Job's namespace."},
			{Name: "exit_code", Type: cty.Number, Clean: true, Doc: "The exit code of the pod that completed (0); with Karmada, 0."},
			{Name: "node", Type: cty.String, Clean: true, Doc: "The node that pod ran on; with Karmada, empty."},
			{Name: "pod", Type: cty.String, Clean: true, Doc: "That pod's name; with Karmada, empty."},
			{Name: "outputs", Type: cty.Map(cty.String), Doc: "The container's termination message, a JSON object, as a map of strings; with Karmada, the first member's (by name)."},
			{Name: "members", Type: cty.Map(memberOutputType), Doc: "With Karmada, by member cluster: its exit_code, node, pod and outputs; else empty."},
		},
		DestroyReads: []string{"namespace", "clusters", "cluster_labels", "kubeconfig", "context"},
		Refresh:      "the recorded Job still exists and completed",
		Undo:         "flow destroy deletes every Job (and Secret, and with Karmada PropagationPolicy) the instance created, with their pods; what is gone already is skipped.",
		Example: `task "k8s_job" "smoke" {
  for_each   = toset(["member1", "member2", "member3"])
  kubeconfig = "${local.config_dir}/${each.key}.config"
  image      = "localhost:32000/busybox:1.36"
  command    = ["sh", "-c"]
  args       = ["nslookup kubernetes.default && printf '{\"ok\":\"yes\"}' > /dev/termination-log"]
  env        = { TOKEN = local.api_token } # from a sensitive variable: into a Secret
  resources  = { requests = { cpu = "50m", memory = "32Mi" } }
  backoff_limit   = 1
  active_deadline = "5m"
}

task "k8s_job" "everywhere" {
  kubeconfig = "${local.config_dir}/karmada-apiserver.config"
  clusters   = ["member1", "member2", "member3"]
  image      = "localhost:32000/busybox:1.36"
  command    = ["sh", "-c", "echo hello from $(hostname)"]
}`,
	}
}

// SetSensitive records which env values derive from a sensitive variable.
func (j *Job) SetSensitive(paths map[string][]cty.Path) {
	for _, p := range paths["env"] {
		if len(p) == 0 { // the whole map: every value
			for k := range j.Env {
				j.markSensitive(k)
			}
			continue
		}
		if idx, ok := p[0].(cty.IndexStep); ok && idx.Key.Type() == cty.String {
			j.markSensitive(idx.Key.AsString())
		}
	}
}

func (j *Job) markSensitive(key string) {
	if j.sensitiveEnv == nil {
		j.sensitiveEnv = map[string]bool{}
	}
	j.sensitiveEnv[key] = true
}

var envName = regexp.MustCompile(`^[-._a-zA-Z][-._a-zA-Z0-9]*$`)

// Validate checks names, quantities and durations; it reads nothing.
func (j *Job) Validate() error {
	if strings.TrimSpace(j.Image) == "" {
		return &tasks.AttrError{Attr: "image", Err: errors.New("must not be empty")}
	}
	if j.Namespace != "" {
		if errs := validation.IsDNS1123Label(j.Namespace); len(errs) > 0 {
			return &tasks.AttrError{Attr: "namespace", Err: fmt.Errorf("%q is not a valid namespace: %s", j.Namespace, strings.Join(errs, "; "))}
		}
	}
	for _, k := range slices.Sorted(maps.Keys(j.Env)) {
		if !envName.MatchString(k) {
			return &tasks.AttrError{Attr: "env", Err: fmt.Errorf("%q is not a valid environment variable name", k)}
		}
	}
	for _, kind := range slices.Sorted(maps.Keys(j.Resources)) {
		if kind != "requests" && kind != "limits" {
			return &tasks.AttrError{Attr: "resources", Err: fmt.Errorf("unknown key %q: want requests and limits", kind)}
		}
		for _, name := range slices.Sorted(maps.Keys(j.Resources[kind])) {
			if _, err := resource.ParseQuantity(j.Resources[kind][name]); err != nil {
				return &tasks.AttrError{Attr: "resources", Err: fmt.Errorf("%s.%s: %q is not a quantity", kind, name, j.Resources[kind][name])}
			}
		}
	}
	if j.BackoffLimit != nil && *j.BackoffLimit < 0 {
		return &tasks.AttrError{Attr: "backoff_limit", Err: errors.New("must not be negative")}
	}
	if j.Parallelism != nil && *j.Parallelism < 1 {
		return &tasks.AttrError{Attr: "parallelism", Err: errors.New("must be at least 1")}
	}
	if j.ActiveDeadline != "" {
		if _, err := j.ActiveDeadline.Positive("active_deadline", 0); err != nil {
			return err
		}
	}
	for _, m := range []struct {
		attr   string
		labels map[string]string
	}{{"node_selector", j.NodeSelector}, {"labels", j.Labels}, {"cluster_labels", j.ClusterLabels}} {
		for _, k := range slices.Sorted(maps.Keys(m.labels)) {
			if errs := validation.IsQualifiedName(k); len(errs) > 0 {
				return &tasks.AttrError{Attr: m.attr, Err: fmt.Errorf("%q is not a valid label key: %s", k, strings.Join(errs, "; "))}
			}
			if errs := validation.IsValidLabelValue(m.labels[k]); len(errs) > 0 {
				return &tasks.AttrError{Attr: m.attr, Err: fmt.Errorf("%q is not a valid label value: %s", m.labels[k], strings.Join(errs, "; "))}
			}
		}
	}
	for _, c := range j.Clusters {
		if c == "" {
			return &tasks.AttrError{Attr: "clusters", Err: errors.New("names must not be empty")}
		}
	}
	if j.DivideReplicas && !j.karmada() {
		return &tasks.AttrError{Attr: "divide_replicas", Err: errors.New("needs clusters or cluster_labels: only Karmada divides replicas")}
	}
	return nil
}

// karmada reports whether the Job is propagated by Karmada.
func (j *Job) karmada() bool { return len(j.Clusters) > 0 || len(j.ClusterLabels) > 0 }

func (j *Job) namespace() string {
	if j.Namespace == "" {
		return defaultNamespace
	}
	return j.Namespace
}

// instanceKey is the hash every Job of the instance is labelled with: the same for
// every run of the address in the state.
func instanceKey(env *tasks.Env) string {
	h := sha256.Sum256([]byte(env.Lineage + "\x00" + env.Address))
	return hex.EncodeToString(h[:10])
}

// jobName is flow-STEP-HASH, HASH over the lineage, the address and every input
// (secret values included, hashed: a changed secret is a changed step). It fits the
// 63 characters a Job's pods' labels allow.
func (j *Job) jobName(env *tasks.Env) string {
	inputs, _ := json.Marshal(j)
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00", env.Lineage, env.Address)
	h.Write(inputs)
	for _, k := range slices.Sorted(maps.Keys(j.Env)) { // Env is in inputs; the marks are not
		if j.sensitiveEnv[k] {
			fmt.Fprintf(h, "\x00%s", k)
		}
	}
	sum := hex.EncodeToString(h.Sum(nil))[:10]
	return "flow-" + stepName(env.Address, 63-len("flow-")-1-len(sum)) + "-" + sum
}

// stepName is the task's name from address (TYPE.NAME[KEY] in modules too), with
// its key, as a DNS label part of at most max characters.
func stepName(address string, max int) string {
	a := address
	if i := strings.LastIndex(a, "k8s_job."); i >= 0 {
		a = a[i+len("k8s_job."):]
	}
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(a) {
		ok := r >= 'a' && r <= 'z' || r >= '0' && r <= '9'
		switch {
		case ok:
			b.WriteRune(r)
			dash = false
		case !dash && b.Len() > 0:
			b.WriteByte('-')
			dash = true
		}
	}
	s := strings.Trim(b.String(), "-")
	if len(s) > max {
		s = strings.TrimRight(s[:max], "-")
	}
	if s == "" {
		s = "step"
	}
	return s
}

var (
	_ tasks.Task            = (*Job)(nil)
	_ tasks.SensitiveInputs = (*Job)(nil)
)
