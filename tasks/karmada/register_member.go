package karmada

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/flowdev/flow/tasks"
	"github.com/zclconf/go-cty/cty"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// agentDeployment is the Deployment karmadactl register creates on the member.
const agentDeployment = "karmada-agent"

var deploymentResource = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}

// Registration registers a member cluster with Karmada in Pull mode with
// `karmadactl register`, which installs karmada-agent on the member. It is the hcl
// config struct of the karmadactl_register task type.
type Registration struct {
	Karmadactl        string   `hcl:"karmadactl,optional" doc:"Path of the karmadactl binary; default \"karmadactl\", looked up in PATH."`
	KarmadactlVersion string   `hcl:"karmadactl_version,optional" doc:"Version the binary must report; default \"v1.13.0\", the version flow's flags were checked against."`
	ExtraArgs         []string `hcl:"extra_args,optional" doc:"Further karmadactl register arguments; they must not set a flag an attribute maps."`

	APIEndpoint      string         `hcl:"api_endpoint" doc:"host:port of the Karmada API server, e.g. karmadactl_token's api_endpoint output."`
	Token            string         `hcl:"token" doc:"Bootstrap token (--token), e.g. karmadactl_token's token output. Never printed."`
	CACertHash       string         `hcl:"ca_cert_hash,optional" doc:"Hash of the Karmada CA's public key, \"sha256:...\" (--discovery-token-ca-cert-hash), e.g. karmadactl_token's output. Required unless unsafe_skip_ca_verification."`
	UnsafeSkipCA     bool           `hcl:"unsafe_skip_ca_verification,optional" doc:"Trust the Karmada API server without ca_cert_hash (--discovery-token-unsafe-skip-ca-verification)."`
	ClusterName      string         `hcl:"cluster_name" doc:"Name of the member in Karmada (--cluster-name)."`
	Kubeconfig       string         `hcl:"kubeconfig,optional" doc:"Path of the member cluster's kubeconfig (--kubeconfig); default $KUBECONFIG, then ~/.kube/config, as kubectl."`
	Context          string         `hcl:"context,optional" doc:"Context in the member's kubeconfig (--context); default its current-context."`
	Namespace        string         `hcl:"namespace,optional" doc:"Member namespace of karmada-agent (--namespace); default karmada-system."`
	AgentImage       string         `hcl:"karmada_agent_image,optional" doc:"Image of karmada-agent (--karmada-agent-image); default docker.io/karmada/karmada-agent of karmadactl's release."`
	AgentReplicas    int            `hcl:"karmada_agent_replicas,optional" doc:"Replicas of karmada-agent (--karmada-agent-replicas); default 1."`
	DiscoveryTimeout tasks.Duration `hcl:"discovery_timeout,optional" doc:"How long to try reaching the Karmada API server, a duration (--discovery-timeout); default 5m."`
	CertRotation     bool           `hcl:"enable_cert_rotation,optional" doc:"Let karmada-agent renew its certificate before it expires (--enable-cert-rotation)."`
	CertExpiration   tasks.Duration `hcl:"cert_expiration,optional" doc:"Lifetime of karmada-agent's certificate, a duration in whole seconds such as \"8760h\" (--cert-expiration-seconds, in seconds); default 365 days."`
	ProxyServer      string         `hcl:"proxy_server_address,optional" doc:"Address of a proxy to the member cluster (--proxy-server-address)."`

	ClusterNamespace string   `hcl:"cluster_namespace,optional" doc:"Namespace in Karmada for the member's secrets (--cluster-namespace); default karmada-cluster."`
	ClusterProvider  string   `hcl:"cluster_provider,optional" doc:"Provider of the member, for scheduling (--cluster-provider)."`
	ClusterRegion    string   `hcl:"cluster_region,optional" doc:"Region of the member, for scheduling (--cluster-region)."`
	ClusterZones     []string `hcl:"cluster_zones,optional" doc:"Zones of the member, for scheduling (--cluster-zones, joined with commas)."`

	AgentArgs          []string `hcl:"agent_args,optional" doc:"Extra arguments for karmada-agent, such as \"--feature-gates=MultiClusterService=true\"; karmadactl v1.13 register has no flag for them, so the task adds them to the Deployment's container command after register and when the agent is already present (replacing an argument with the same --name=)."`
	ClusterAPIEndpoint string   `hcl:"cluster_api_endpoint,optional" doc:"The member's API server as Karmada reaches it (the Cluster's spec.apiEndpoint, which Karmada's cluster proxy dials), when it differs from kubeconfig's server, as behind port forwards; karmadactl v1.13 register has no flag for it, so the task sets karmada-agent's --cluster-api-endpoint after register and when the agent is already present, and the agent, restarted by the change, writes it into its Cluster. An https:// URL."`
	AgentAPIEndpoint   string   `hcl:"agent_api_endpoint,optional" doc:"The Karmada API server as karmada-agent reaches it from inside the member, when it differs from the server karmadactl init published in cluster-info (NAT, port forwards); the task rewrites the server of the agent's kubeconfig Secret and restarts the agent. Default: leave it."`
	KarmadaKubeconfig  string   `hcl:"karmada_kubeconfig,optional" doc:"Kubeconfig of the Karmada API server as this machine reaches it, e.g. karmadactl_init's kubeconfig output; flow destroy's karmadactl unregister uses it (--karmada-config). Default: karmadactl reads the agent's own, whose server may be one only the member reaches."`
}

// registerFlags is every flag karmadactl_register emits besides `register ENDPOINT`.
var registerFlags = flagTable{
	{"token", "token", kindString},
	{"ca_cert_hash", "discovery-token-ca-cert-hash", kindString},
	{"unsafe_skip_ca_verification", "discovery-token-unsafe-skip-ca-verification", kindBool},
	{"cluster_name", "cluster-name", kindString},
	{"kubeconfig", "kubeconfig", kindString},
	{"context", "context", kindString},
	{"namespace", "namespace", kindString},
	{"karmada_agent_image", "karmada-agent-image", kindString},
	{"karmada_agent_replicas", "karmada-agent-replicas", kindInt},
	{"discovery_timeout", "discovery-timeout", kindDuration},
	{"enable_cert_rotation", "enable-cert-rotation", kindBool},
	{"cert_expiration", "cert-expiration-seconds", kindSeconds},
	{"proxy_server_address", "proxy-server-address", kindString},
	{"cluster_namespace", "cluster-namespace", kindString},
	{"cluster_provider", "cluster-provider", kindString},
	{"cluster_region", "cluster-region", kindString},
	{"cluster_zones", "cluster-zones", kindList},
}

func registerType() tasks.Type {
	return tasks.Type{
		Name:    "karmadactl_register",
		Summary: "Register a member cluster with Karmada in Pull mode with karmadactl register",
		Doc: `Runs karmadactl register API_ENDPOINT on the member (kubeconfig, context), which
bootstraps with the token and installs karmada-agent. Each attribute maps to one
karmadactl register flag; extra_args carries anything else.

When the member already runs the Deployment karmada-agent in namespace, the task
does not register again and says "already present". With agent_api_endpoint, after
a register and when the agent is already present, the task makes every server in
the agent's kubeconfig (Secret karmada-kubeconfig in namespace, which karmadactl
register fills from Karmada's cluster-info) https://AGENT_API_ENDPOINT and, when it
changed that or the agent has not been restarted for it yet, restarts karmada-agent
through a pod-template annotation (flow.dev/karmada-kubeconfig-server); the
kubeconfig, which holds the agent's client key, is never printed. With
cluster_api_endpoint and agent_args, at the same moments, karmada-agent's
--cluster-api-endpoint and the arguments are set in its command. The token is never printed: the
command line and karmadactl's output are shown with it replaced by (sensitive).
karmadactl takes the token only as a flag, so it is visible in the process list of
the machine flow runs on while the command runs. A register that could not reach an
API server ("Unable to connect to the server") is a transient fault: what it left on
the member is removed and it runs again.`,
		New: func() tasks.Task { return &Registration{} },
		Outputs: []tasks.Output{
			{Name: "cluster", Type: cty.String, Doc: "The member's name in Karmada, cluster_name.", Clean: true},
		},
		Undo: "flow destroy runs karmadactl unregister (the Cluster object, karmada-agent and what register made in the member; it waits for the Cluster to go for what is left of the task's timeout, or 5 minutes) unless the member has none of register's objects and Karmada no Cluster of that name; the token is not needed.",
		DestroyReads: []string{"karmadactl", "karmadactl_version", "cluster_name", "kubeconfig", "context",
			"namespace", "cluster_namespace", "karmada_kubeconfig"},
		Example: `task "karmadactl_register" "member2" {
  api_endpoint = karmadactl_token.register.api_endpoint
  token        = karmadactl_token.register.token
  ca_cert_hash = karmadactl_token.register.ca_cert_hash
  cluster_name = "member2"
  kubeconfig   = "/etc/flow/member2.kubeconfig"
}`,
	}
}

// Validate checks the endpoint, the shape of the token and hash (without ever
// quoting the token), the cluster name, durations and extra_args.
func (r *Registration) Validate() error {
	if err := validateVersion(r.KarmadactlVersion); err != nil {
		return err
	}
	if err := validateEndpoint(r.APIEndpoint); err != nil {
		return &tasks.AttrError{Attr: "api_endpoint", Err: err}
	}
	if !bootstrapToken.MatchString(r.Token) || len(r.Token) != 23 {
		return attrErr("token", "is not a bootstrap token of the form [a-z0-9]{6}.[a-z0-9]{16}")
	}
	switch {
	case r.CACertHash == "" && !r.UnsafeSkipCA:
		return attrErr("ca_cert_hash", "required unless unsafe_skip_ca_verification is true")
	case r.CACertHash != "" && !strings.HasPrefix(r.CACertHash, "sha256:"):
		return attrErr("ca_cert_hash", "%q is not of the form sha256:HEX", r.CACertHash)
	}
	if err := validateClusterName("cluster_name", r.ClusterName); err != nil {
		return err
	}
	if r.AgentAPIEndpoint != "" {
		if err := validateEndpoint(r.AgentAPIEndpoint); err != nil {
			return &tasks.AttrError{Attr: "agent_api_endpoint", Err: err}
		}
	}
	if err := validateHTTPSURL(r.ClusterAPIEndpoint); err != nil {
		return &tasks.AttrError{Attr: "cluster_api_endpoint", Err: err}
	}
	if err := validateArgs("agent_args", r.agentArgs()); err != nil {
		return err
	}
	if err := validateDiscoveryTimeout(r.DiscoveryTimeout); err != nil {
		return err
	}
	if r.AgentReplicas < 0 {
		return attrErr("karmada_agent_replicas", "%d must not be negative", r.AgentReplicas)
	}
	if err := registerFlags.validate(r, r.ExtraArgs); err != nil {
		return err
	}
	return validateImages(r, registerFlags)
}

// validateEndpoint checks host:port without a scheme, as karmadactl register wants.
func validateEndpoint(endpoint string) error {
	host, port, err := net.SplitHostPort(endpoint)
	if err != nil {
		return fmt.Errorf("%q is not host:port: %w", endpoint, err)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 || host == "" || strings.Contains(host, "/") {
		return fmt.Errorf("%q is not host:port", endpoint)
	}
	return nil
}

// Run registers the member unless karmada-agent already runs there.
func (r *Registration) Run(ctx context.Context, env *tasks.Env) (tasks.Outputs, error) {
	r = r.in(env)
	out := tasks.Outputs{"cluster": cty.StringVal(r.ClusterName)}
	bin := newBinary(r.Karmadactl, r.KarmadactlVersion)
	if err := bin.checkVersion(ctx, env); err != nil {
		return nil, err
	}
	client, host, err := r.memberClient()
	if err != nil {
		return nil, fmt.Errorf("register %q: %w", r.ClusterName, err)
	}
	_, err = tasks.RetryTransient(ctx, env, unreachableFault, func() (struct{}, error) {
		return struct{}{}, r.register(ctx, env, bin, client, host)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// register runs karmadactl register once, unless the member already runs a working
// karmada-agent, after removing what an earlier, half-done register left.
func (r *Registration) register(ctx context.Context, env *tasks.Env, bin binary, client dynamic.Interface, host string) error {
	done, err := r.keepOrClean(ctx, env, client)
	if err != nil {
		return fmt.Errorf("register %q: member cluster %s: %w", r.ClusterName, host, err)
	}
	if done {
		return nil
	}
	args := append(append([]string{"register", r.APIEndpoint}, registerFlags.args(r)...), r.ExtraArgs...)
	fmt.Fprintln(env.Stdout, redact(strings.Join(append([]string{"karmadactl"}, args...), " "), r.Token))
	stdout, stderr := newRedactingWriter(env.Stdout, r.Token), newRedactingWriter(env.Stderr, r.Token)
	registered, fixed := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(fixed)
		if r.AgentAPIEndpoint != "" {
			r.fixServerDuringRegister(ctx, env, registered)
		}
	}()
	outText, errText, err := bin.run(ctx, env, args, stdout, stderr)
	close(registered)
	<-fixed
	stdout.Close()
	stderr.Close()
	if err != nil {
		err = fmt.Errorf("karmadactl register %q: %w", r.ClusterName, err)
		if strings.Contains(outText+errText, unableToConnect) {
			return unreachable{err}
		}
		return err
	}
	return r.ensureAgent(ctx, env)
}

// unableToConnect is what karmadactl prints when it cannot reach an API server.
const unableToConnect = "Unable to connect to the server"

// unreachable is a karmadactl register that could not reach an API server: CI saw
// "Unable to connect to the server: EOF" from the Karmada API server just after
// karmadactl init, behind its proxy device. It runs again after the next attempt's
// keepOrClean has removed whatever it left on the member.
type unreachable struct{ err error }

func (u unreachable) Error() string { return u.err.Error() }
func (u unreachable) Unwrap() error { return u.err }

// unreachableFault is the tasks.Classifier of register attempts.
func unreachableFault(err error) string {
	var u unreachable
	if errors.As(err, &u) {
		return "karmadactl could not reach the API server"
	}
	return ""
}

// keepOrClean reports whether the member already runs a working karmada-agent (then
// it points it at agent_api_endpoint and says so), and otherwise removes what a
// half-done register left, which karmadactl register's preflight would refuse.
func (r *Registration) keepOrClean(ctx context.Context, env *tasks.Env, client dynamic.Interface) (bool, error) {
	state, err := r.agentState(ctx, env, client)
	if err != nil {
		return false, err
	}
	var why string
	switch state {
	case agentNone:
		return false, nil
	case agentDeployed:
		if err := r.ensureAgent(ctx, env); err != nil {
			return false, err
		}
		if r.waitAgentAvailable(ctx, client) {
			fmt.Fprintf(env.Stdout, "karmada-agent in namespace %s already present (cluster %s)\n", r.namespace(), r.ClusterName)
			return true, nil
		}
		why = fmt.Sprintf("deployment %s has no available replica after %v", agentDeployment, agentAvailableWait)
	case agentLeftovers:
		why = fmt.Sprintf("secret %s or serviceaccount %s without deployment %s", agentKubeconfigSecret, agentServiceAccount, agentDeployment)
	}
	fmt.Fprintf(env.Stdout, "karmadactl register: half-done in namespace %s (%s); removing it and registering again\n", r.namespace(), why)
	return false, r.removeAgent(ctx, client)
}

func (r *Registration) namespace() string {
	if r.Namespace == "" {
		return defaultNamespace
	}
	return r.Namespace
}

var _ tasks.Task = (*Registration)(nil)

// validateDiscoveryTimeout refuses the discovery timeouts karmadactl v1.13.0 cannot
// run with: register also waits for karmada-agent's rollout for
// time.Duration(int(timeout))*time.Second, nanoseconds taken as seconds, which
// overflows; where the product wraps negative the wait ends at once and register
// fails ("wait for Deployment(karmada-system/karmada-agent) rollout: context
// deadline exceeded"), as 2m does. The default, 5m, wraps positive (a wait of
// about 150 years, bounded by the task's timeout).
func validateDiscoveryTimeout(d tasks.Duration) error {
	if d == "" {
		return nil
	}
	timeout, err := d.Parse()
	if err != nil {
		return nil // the flag table's check names it
	}
	if wait := timeout * time.Second; timeout > 0 && wait <= 0 {
		return attrErr("discovery_timeout", "%v: karmadactl %s also takes it, scaled wrongly, as the wait for karmada-agent's rollout, which for this value overflows to a negative time and fails the register at once; leave it unset (5m works) or choose another value", timeout, PinnedVersion)
	}
	return nil
}
