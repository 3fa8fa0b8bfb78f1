package karmada

import (
	"strings"
	"testing"

	"github.com/flowdev/flow/tasks"
	"github.com/flowdev/flow/tasks/taskstest"
	"github.com/zclconf/go-cty/cty"
)

func TestRegisteredTypes(t *testing.T) {
	r := tasks.NewRegistry()
	if err := Register(r); err != nil {
		t.Fatal(err)
	}
	// The examples refer to other tasks' outputs.
	vars := map[string]cty.Value{
		"karmadactl_init": cty.ObjectVal(map[string]cty.Value{"karmada": cty.ObjectVal(map[string]cty.Value{
			"kubeconfig": cty.StringVal("/var/lib/flow/karmada/karmada-apiserver.config"),
		})}),
		"karmadactl_token": cty.ObjectVal(map[string]cty.Value{"register": cty.ObjectVal(map[string]cty.Value{
			"api_endpoint": cty.StringVal("10.0.3.10:32443"),
			"token":        cty.StringVal("abcdef.0123456789abcdef"),
			"ca_cert_hash": cty.StringVal("sha256:0123"),
		})}),
	}
	outputs := map[string]map[string]cty.Type{
		"karmadactl_init":     {"kubeconfig": cty.String, "karmada_data": cty.String},
		"karmadactl_join":     {"cluster": cty.String},
		"karmadactl_token":    {"token": cty.String, "ca_cert_hash": cty.String, "api_endpoint": cty.String, "register_command": cty.String},
		"karmadactl_register": {"cluster": cty.String},
		"karmada_addon":       {"deployment": cty.String, "namespace": cty.String},
	}
	for name, want := range outputs {
		typ, ok := r.Lookup(name)
		if !ok {
			t.Fatalf("%s not registered", name)
		}
		taskstest.CheckType(t, *typ, want)
		taskstest.CheckExample(t, *typ, vars)
	}
}

// The token and the command that carries it are secrets (the CA hash and the
// endpoint are not); the names and paths the others publish are Clean, so a
// sensitive input (register's token) does not hide them.
func TestOutputSensitivity(t *testing.T) {
	for _, typ := range []tasks.Type{initType(), joinType(), tokenType(), registerType(), addonType()} {
		for _, o := range typ.Outputs {
			isToken := typ.Name == "karmadactl_token"
			secret := isToken && (o.Name == "token" || o.Name == "register_command")
			if o.Sensitive != secret || o.Clean == isToken {
				t.Errorf("%s output %s: Sensitive %v, Clean %v; want Sensitive %v, Clean %v", typ.Name, o.Name, o.Sensitive, o.Clean, secret, !isToken)
			}
		}
	}
}

const goodToken = "abcdef.0123456789abcdef"

// addon is a valid karmada_addon, changed by edit.
func addon(edit func(*Addon)) *Addon {
	a := &Addon{Addon: "karmada-search", KarmadaKubeconfig: "karmada.config", ForwarderImage: "localhost:32000/socat:1.7.4",
		LoopbackForwards: map[string]string{"127.0.0.1:16441": "10.1.0.1:16441", "16442": "10.1.0.1:16442"}}
	if edit != nil {
		edit(a)
	}
	return a
}

func TestValidate(t *testing.T) {
	no := false
	register := func(edit func(*Registration)) *Registration {
		r := &Registration{APIEndpoint: "127.0.0.1:5443", Token: goodToken, CACertHash: "sha256:00", ClusterName: "member2"}
		if edit != nil {
			edit(r)
		}
		return r
	}
	taskstest.CheckValidate(t, []taskstest.ValidateCase{
		{Name: "register discovery_timeout karmadactl overflows", Task: register(func(r *Registration) { r.DiscoveryTimeout = "2m" }), Attr: "discovery_timeout", Msg: "overflows to a negative time"},
		{Name: "register discovery_timeout default", Task: register(func(r *Registration) { r.DiscoveryTimeout = "5m" })},
		{Name: "init minimal", Task: &Init{}},
		{Name: "addon search", Task: addon(nil)},
		{Name: "addon estimator", Task: addon(func(a *Addon) { a.Addon, a.Cluster, a.MemberKubeconfig = estimatorAddon, "member1", "m1.config" })},
		{Name: "addon unknown", Task: addon(func(a *Addon) { a.Addon = "karmada-dashboard" }), Attr: "addon", Msg: `"karmada-dashboard" is not an addon karmadactl enables; one of karmada-descheduler, karmada-metrics-adapter, karmada-scheduler-estimator, karmada-search`},
		{Name: "addon estimator without member", Task: addon(func(a *Addon) { a.Addon = estimatorAddon }), Attr: "cluster", Msg: "karmada-scheduler-estimator is per member: name the member"},
		{Name: "addon estimator without kubeconfig", Task: addon(func(a *Addon) { a.Addon, a.Cluster = estimatorAddon, "member1" }), Attr: "member_kubeconfig", Msg: "required"},
		{Name: "addon cluster on search", Task: addon(func(a *Addon) { a.Cluster = "member1" }), Attr: "cluster", Msg: "only karmada-scheduler-estimator is per member"},
		{Name: "addon forward port", Task: addon(func(a *Addon) { a.LoopbackForwards = map[string]string{"70000": "10.1.0.1:16441"} }), Attr: "loopback_forwards", Msg: `"70000" is neither a port nor a loopback ADDRESS:PORT`},
		{Name: "addon forward not loopback", Task: addon(func(a *Addon) { a.LoopbackForwards = map[string]string{"10.0.0.1:16441": "10.1.0.1:16441"} }), Attr: "loopback_forwards", Msg: "neither a port nor a loopback"},
		{Name: "addon forward target", Task: addon(func(a *Addon) { a.LoopbackForwards = map[string]string{"16441": "10.1.0.1"} }), Attr: "loopback_forwards", Msg: `16441 => "10.1.0.1" is not HOST:PORT`},
		{Name: "addon forward without image", Task: addon(func(a *Addon) { a.ForwarderImage = "" }), Attr: "forwarder_image", Msg: "needs the sidecar's image"},
		{Name: "addon image in extra_args", Task: addon(func(a *Addon) { a.ExtraArgs = []string{"--karmada-search-image=x"} }), Attr: "extra_args", Msg: "flow sets it itself"},
		{Name: "addon kubeconfig in extra_args", Task: addon(func(a *Addon) { a.ExtraArgs = []string{"--kubeconfig=x"} }), Attr: "extra_args", Msg: "set attribute kubeconfig instead"},
		{Name: "init full", Task: &Init{KarmadactlVersion: "v1.13.0", WaitTimeout: "0s", CertValidity: "8760h", Port: 32443,
			AdvertiseAddress: "10.0.0.1", CertExternalIP: []string{"::1"}, ImagePullPolicy: "Always", EtcdStorageMode: "emptyDir",
			EtcdReplicas: 3, CACertFile: "/ca.crt", CAKeyFile: "/ca.key", EtcdImage: "registry.k8s.io/etcd:3.5.16-0", DeinitFirst: &no}},
		{Name: "init bad version", Task: &Init{KarmadactlVersion: "1.13"}, Attr: "karmadactl_version", Msg: "not a version"},
		{Name: "init bad wait_timeout", Task: &Init{WaitTimeout: "5 minutes"}, Attr: "wait_timeout", Msg: "not a duration"},
		{Name: "init fractional wait_timeout", Task: &Init{WaitTimeout: "1500ms"}, Attr: "wait_timeout", Msg: "whole seconds"},
		{Name: "init negative cert validity", Task: &Init{CertValidity: "-1h"}, Attr: "cert_validity_period", Msg: "negative"},
		{Name: "init bad port", Task: &Init{Port: 70000}, Attr: "port", Msg: "not a port"},
		{Name: "init offline without advertise_address", Task: &Init{InternetIPLookup: &no}, Attr: "internet_ip_lookup", Msg: "needs advertise_address"},
		{Name: "init offline", Task: &Init{InternetIPLookup: &no, AdvertiseAddress: "127.0.0.1"}},
		{Name: "init even etcd replicas", Task: &Init{EtcdReplicas: 2}, Attr: "etcd_replicas", Msg: "odd"},
		{Name: "init bad advertise address", Task: &Init{AdvertiseAddress: "karmada.lab"}, Attr: "advertise_address", Msg: "not an IP"},
		{Name: "init bad cert ip", Task: &Init{CertExternalIP: []string{"10.0.0.1", "x"}}, Attr: "cert_external_ip", Msg: `"x"`},
		{Name: "init ca key without cert", Task: &Init{CAKeyFile: "/ca.key"}, Attr: "ca_key_file", Msg: "both or neither"},
		{Name: "init bad pull policy", Task: &Init{ImagePullPolicy: "always"}, Attr: "image_pull_policy", Msg: "not one of"},
		{Name: "init bad storage mode", Task: &Init{EtcdStorageMode: "pvc"}, Attr: "etcd_storage_mode", Msg: "not one of"},
		{Name: "init bad image", Task: &Init{SchedulerImage: "Not An Image"}, Attr: "karmada_scheduler_image", Msg: "not an image reference"},
		{Name: "init extra arg sets mapped flag", Task: &Init{ExtraArgs: []string{"--karmada-data=/x"}}, Attr: "extra_args", Msg: "set attribute karmada_data"},
		{Name: "init extra arg sets force", Task: &Init{ExtraArgs: []string{"--force"}}, Attr: "extra_args", Msg: "--force: flow sets it"},
		{Name: "init controller_manager_args", Task: &Init{ControllerManagerArgs: []string{"--feature-gates=Failover=true", "--v=2"}}},
		{Name: "init controller_manager_args not a flag", Task: &Init{ControllerManagerArgs: []string{"feature-gates=Failover=true"}}, Attr: "controller_manager_args", Msg: "not a --flag"},
		{Name: "init controller_manager_args twice", Task: &Init{ControllerManagerArgs: []string{"--v=2", "--v=4"}}, Attr: "controller_manager_args", Msg: "--v is set twice"},
		{Name: "init host_network", Task: &Init{HostNetwork: []string{"karmada-controller-manager", "karmada-aggregated-apiserver"}}},
		{Name: "init host_network unknown", Task: &Init{HostNetwork: []string{"karmada-search"}}, Attr: "host_network", Msg: `"karmada-search" is not one of karmadactl init's Deployments`},
		{Name: "init host_network twice", Task: &Init{HostNetwork: []string{"karmada-webhook", "karmada-webhook"}}, Attr: "host_network", Msg: "karmada-webhook is named twice"},
		{Name: "register cluster_api_endpoint not https", Task: &Registration{APIEndpoint: "10.0.0.1:32443", Token: goodToken, CACertHash: "sha256:00", ClusterName: "m", ClusterAPIEndpoint: "10.0.3.14:16443"}, Attr: "cluster_api_endpoint", Msg: "is not an https:// URL"},
		{Name: "register agent_args sets the endpoint twice", Task: &Registration{APIEndpoint: "10.0.0.1:32443", Token: goodToken, CACertHash: "sha256:00", ClusterName: "m", ClusterAPIEndpoint: "https://10.0.3.14:16443", AgentArgs: []string{"--cluster-api-endpoint=https://x:1"}}, Attr: "agent_args", Msg: "--cluster-api-endpoint is set twice"},
		{Name: "init empty extra arg", Task: &Init{ExtraArgs: []string{""}}, Attr: "extra_args", Msg: "empty"},

		{Name: "join", Task: &Join{Cluster: "member1", ClusterZones: []string{"a"}}},
		{Name: "join api_endpoint", Task: &Join{Cluster: "member1", APIEndpoint: "https://10.0.3.11:6443"}},
		{Name: "join api_endpoint without scheme", Task: &Join{Cluster: "m", APIEndpoint: "10.0.3.11:6443"}, Attr: "api_endpoint", Msg: "not an https:// URL"},
		{Name: "join api_endpoint http", Task: &Join{Cluster: "m", APIEndpoint: "http://10.0.3.11:6443"}, Attr: "api_endpoint", Msg: "not an https:// URL"},
		{Name: "join api_endpoint without host", Task: &Join{Cluster: "m", APIEndpoint: "https://:6443"}, Attr: "api_endpoint", Msg: "no host"},
		{Name: "join bad cluster", Task: &Join{Cluster: "Member_1"}, Attr: "cluster", Msg: "RFC 1123"},
		{Name: "join long cluster", Task: &Join{Cluster: "m123456789012345678901234567890123456789012345678"}, Attr: "cluster", Msg: "longer than 48"},
		{Name: "join extra arg sets context", Task: &Join{Cluster: "m", ExtraArgs: []string{"--karmada-context", "x"}}, Attr: "extra_args", Msg: "set attribute context"},

		{Name: "token", Task: &Token{Kubeconfig: "/k", TTL: "0s"}},
		{Name: "token without kubeconfig", Task: &Token{}, Attr: "kubeconfig", Msg: "must not be empty"},
		{Name: "token bad ttl", Task: &Token{Kubeconfig: "/k", TTL: "1d"}, Attr: "ttl", Msg: "not a duration"},
		{Name: "token extra arg sets print-register-command", Task: &Token{Kubeconfig: "/k", ExtraArgs: []string{"--print-register-command=false"}}, Attr: "extra_args", Msg: "--print-register-command: flow sets it"},

		{Name: "register", Task: register(nil)},
		{Name: "register skip ca", Task: register(func(r *Registration) { r.CACertHash, r.UnsafeSkipCA = "", true })},
		{Name: "register endpoint with scheme", Task: register(func(r *Registration) { r.APIEndpoint = "https://127.0.0.1:5443" }), Attr: "api_endpoint", Msg: "not host:port"},
		{Name: "register endpoint without port", Task: register(func(r *Registration) { r.APIEndpoint = "127.0.0.1" }), Attr: "api_endpoint", Msg: "not host:port"},
		{Name: "register agent_api_endpoint", Task: register(func(r *Registration) { r.AgentAPIEndpoint = "10.0.3.10:5443" })},
		{Name: "register agent_api_endpoint with scheme", Task: register(func(r *Registration) { r.AgentAPIEndpoint = "https://10.0.3.10:5443" }), Attr: "agent_api_endpoint", Msg: "not host:port"},
		{Name: "register bad token", Task: register(func(r *Registration) { r.Token = "abcdef.SECRETSECRETSECRE" }), Attr: "token", Msg: "not a bootstrap token"},
		{Name: "register without hash", Task: register(func(r *Registration) { r.CACertHash = "" }), Attr: "ca_cert_hash", Msg: "required unless"},
		{Name: "register bad hash", Task: register(func(r *Registration) { r.CACertHash = "md5:00" }), Attr: "ca_cert_hash", Msg: "sha256"},
		{Name: "register without cluster name", Task: register(func(r *Registration) { r.ClusterName = "" }), Attr: "cluster_name", Msg: "RFC 1123"},
		{Name: "register bad image", Task: register(func(r *Registration) { r.AgentImage = "a b" }), Attr: "karmada_agent_image", Msg: "image reference"},
		{Name: "register fractional cert expiration", Task: register(func(r *Registration) { r.CertExpiration = "1.5s" }), Attr: "cert_expiration", Msg: "whole seconds"},
		{Name: "register extra arg sets token", Task: register(func(r *Registration) { r.ExtraArgs = []string{"--token=x"} }), Attr: "extra_args", Msg: "set attribute token"},
	})
}

// A token is never quoted back, malformed or passed in extra_args.
func TestValidateNeverQuotesToken(t *testing.T) {
	for _, r := range []*Registration{
		{APIEndpoint: "127.0.0.1:5443", Token: "abcdef.SECRETSECRETSECRE", CACertHash: "sha256:00", ClusterName: "m"},
		{APIEndpoint: "127.0.0.1:5443", Token: goodToken, CACertHash: "sha256:00", ClusterName: "m", ExtraArgs: []string{"--token=abcdef.SECRETSECRETSECRE"}},
	} {
		if err := r.Validate(); err == nil || strings.Contains(err.Error(), "SECRET") {
			t.Errorf("Validate() = %v, want an error without the token", err)
		}
	}
}
