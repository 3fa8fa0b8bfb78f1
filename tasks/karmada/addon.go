package karmada

import (
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/flowdev/flow/tasks"
	"github.com/zclconf/go-cty/cty"
)

// Addon enables one of Karmada's addons with `karmadactl addons enable`. It is
// the hcl config struct of the karmada_addon task type.
type Addon struct {
	Karmadactl        string   `hcl:"karmadactl,optional" doc:"Path of the karmadactl binary; default \"karmadactl\", looked up in PATH."`
	KarmadactlVersion string   `hcl:"karmadactl_version,optional" doc:"Version the binary must report; default \"v1.13.0\", the version flow's flags were checked against."`
	ExtraArgs         []string `hcl:"extra_args,optional" doc:"Further karmadactl addons enable arguments; they must not set a flag an attribute maps."`

	Addon             string `hcl:"addon" doc:"The addon: karmada-search, karmada-descheduler, karmada-scheduler-estimator or karmada-metrics-adapter."`
	Image             string `hcl:"image,optional" doc:"The addon's image (--karmada-search-image, ...); default karmadactl's, on docker.io."`
	Kubeconfig        string `hcl:"kubeconfig,optional" doc:"Path of the host cluster's kubeconfig (--kubeconfig), where Karmada's components run; default $KUBECONFIG, then ~/.kube/config."`
	Context           string `hcl:"context,optional" doc:"Context in the host kubeconfig (--context); default its current-context."`
	KarmadaKubeconfig string `hcl:"karmada_kubeconfig" doc:"Path of the Karmada API server's kubeconfig (--karmada-kubeconfig), e.g. karmadactl_init's kubeconfig output."`
	KarmadaContext    string `hcl:"karmada_context,optional" doc:"Context in the Karmada kubeconfig (--karmada-context); default its current-context."`
	Namespace         string `hcl:"namespace,optional" doc:"Namespace of Karmada's components in the host cluster (--namespace); default karmada-system."`

	Cluster          string `hcl:"cluster,optional" doc:"karmada-scheduler-estimator only, and required there: the member the estimator is for (--cluster)."`
	MemberKubeconfig string `hcl:"member_kubeconfig,optional" doc:"karmada-scheduler-estimator only, and required there: the member's kubeconfig (--member-kubeconfig), stored in a Secret the estimator reads."`
	MemberContext    string `hcl:"member_context,optional" doc:"Context in member_kubeconfig (--member-context); default its current-context."`

	LoopbackForwards map[string]string `hcl:"loopback_forwards,optional" doc:"Ports of the addon pods' own loopback forwarded elsewhere, PORT (on 127.0.0.1) or ADDRESS:PORT (a loopback address) => HOST:PORT, by a sidecar container (socat) the task adds: for member API servers the Clusters name at 127.0.0.1, which only the host cluster's node serves. Needs forwarder_image."`
	ForwarderImage   string            `hcl:"forwarder_image,optional" doc:"Image of the loopback_forwards sidecar; it must have bash and socat."`
}

// addonImageFlags maps each addon to the enable flag of its image.
var addonImageFlags = map[string]string{
	"karmada-search":              "karmada-search-image",
	"karmada-descheduler":         "karmada-descheduler-image",
	"karmada-scheduler-estimator": "karmada-scheduler-estimator-image",
	"karmada-metrics-adapter":     "karmada-metrics-adapter-image",
}

// estimatorAddon is the one addon installed once per member.
const estimatorAddon = "karmada-scheduler-estimator"

// addonFlags is every flag karmada_addon emits for both enable and disable,
// besides the image flag, which depends on the addon.
var addonFlags = flagTable{
	{"kubeconfig", "kubeconfig", kindString},
	{"context", "context", kindString},
	{"karmada_kubeconfig", "karmada-kubeconfig", kindString},
	{"karmada_context", "karmada-context", kindString},
	{"namespace", "namespace", kindString},
	{"cluster", "cluster", kindString},
}

// addonEnableFlags is what only enable takes; member_context is passed
// separately, defaulted to the kubeconfig's current context.
var addonEnableFlags = flagTable{
	{"member_kubeconfig", "member-kubeconfig", kindString},
}

func addonType() tasks.Type {
	return tasks.Type{
		Name:    "karmada_addon",
		Summary: "Enable one of Karmada's addons (search, descheduler, scheduler estimator, metrics adapter) with karmadactl addons enable",
		Doc: `Runs karmadactl addons enable ADDON against the host cluster (kubeconfig, context)
and the Karmada API server (karmada_kubeconfig), with the addon's image, then waits
until its Deployment has rolled out. karmada-scheduler-estimator is per member:
cluster and member_kubeconfig name it.

When the addon's Deployment is already there with the wanted image (and sidecar),
rolled out, the task changes nothing and says "already enabled": a run killed after
the enable is adopted, not enabled twice.

loopback_forwards adds a sidecar container to the addon's pods that forwards ports of
the pod's loopback to other addresses. Karmada's addons dial members at the Clusters'
spec.apiEndpoint; when that is an address only the host cluster's node serves (a
port forwarded to the node's loopback, as on flow's Kubernetes lab), a pod reaches it
through the sidecar at the same address and port, and TLS sees the name it expects.`,
		New: func() tasks.Task { return &Addon{} },
		Outputs: []tasks.Output{
			{Name: "deployment", Type: cty.String, Doc: "The addon's Deployment in the host cluster.", Clean: true},
			{Name: "namespace", Type: cty.String, Doc: "Its namespace.", Clean: true},
		},
		Undo: "flow destroy disables the addon (karmadactl addons disable --force): its Deployment, Service, Secret and APIService go; an addon already gone is already undone.",
		Example: `task "karmada_addon" "estimator" {
  karmadactl         = "/usr/local/bin/karmadactl"
  addon              = "karmada-scheduler-estimator"
  cluster            = "member1"
  member_kubeconfig  = "/etc/flow/member1.kubeconfig"
  image              = "localhost:32000/karmada-scheduler-estimator:v1.13.0"
  kubeconfig         = "/etc/flow/host.kubeconfig"
  karmada_kubeconfig = karmadactl_init.karmada.kubeconfig
  loopback_forwards  = { "16441" = "10.1.0.1:16441" }
  forwarder_image    = "localhost:32000/socat:1.7.4"
}`,
	}
}

// Validate checks the addon name, the estimator's member, the forwards and extra_args.
func (a *Addon) Validate() error {
	if err := validateVersion(a.KarmadactlVersion); err != nil {
		return err
	}
	if _, ok := addonImageFlags[a.Addon]; !ok {
		return attrErr("addon", "%q is not an addon karmadactl enables; one of %s", a.Addon, strings.Join(slices.Sorted(maps.Keys(addonImageFlags)), ", "))
	}
	perMember := a.Addon == estimatorAddon
	switch {
	case perMember && a.Cluster == "":
		return attrErr("cluster", "%s is per member: name the member", estimatorAddon)
	case perMember && a.MemberKubeconfig == "":
		return attrErr("member_kubeconfig", "%s reads the member through it: required", estimatorAddon)
	case !perMember && (a.Cluster != "" || a.MemberKubeconfig != "" || a.MemberContext != ""):
		return attrErr("cluster", "only %s is per member", estimatorAddon)
	}
	if perMember {
		if err := validateClusterName("cluster", a.Cluster); err != nil {
			return err
		}
	}
	if err := validateForwards(a.LoopbackForwards); err != nil {
		return err
	}
	if len(a.LoopbackForwards) > 0 && a.ForwarderImage == "" {
		return attrErr("forwarder_image", "loopback_forwards needs the sidecar's image")
	}
	return append(slices.Clone(addonFlags), addonEnableFlags...).validate(a, a.ExtraArgs, "member-context", addonImageFlags[a.Addon], "pod-timeout")
}

// validateForwards checks LISTEN => HOST:PORT pairs, LISTEN being PORT or
// ADDRESS:PORT with a loopback ADDRESS.
func validateForwards(forwards map[string]string) error {
	for listen, to := range forwards {
		addr, port := forwardListen(listen)
		if ip := net.ParseIP(addr); ip == nil || !ip.IsLoopback() || !isPort(port) {
			return attrErr("loopback_forwards", "%q is neither a port nor a loopback ADDRESS:PORT", listen)
		}
		host, p, err := net.SplitHostPort(to)
		if err != nil || host == "" || !isPort(p) {
			return attrErr("loopback_forwards", "%s => %q is not HOST:PORT", listen, to)
		}
	}
	return nil
}

// forwardListen splits a loopback_forwards key into the address and port the
// sidecar listens on; a bare port listens on 127.0.0.1.
func forwardListen(listen string) (addr, port string) {
	if addr, port, err := net.SplitHostPort(listen); err == nil {
		return addr, port
	}
	return "127.0.0.1", listen
}

func isPort(s string) bool {
	n, err := strconv.Atoi(s)
	return err == nil && n >= 1 && n <= 65535
}

// deployment is the addon's Deployment in the host cluster, as karmadactl names it.
func (a *Addon) deployment() string {
	if a.Addon == estimatorAddon {
		return estimatorAddon + "-" + a.Cluster
	}
	return a.Addon
}

func (a *Addon) namespace() string {
	if a.Namespace == "" {
		return defaultNamespace
	}
	return a.Namespace
}

var _ tasks.Task = (*Addon)(nil)
