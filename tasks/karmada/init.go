package karmada

import (
	"net"
	"slices"
	"strings"

	"github.com/flowdev/flow/tasks"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/zclconf/go-cty/cty"
)

// Defaults of karmadactl init that Run relies on.
const (
	defaultKarmadaData = "/etc/karmada"
	defaultNamespace   = "karmada-system"
)

// Init installs a Karmada control plane on a host cluster with `karmadactl init`.
// It is the hcl config struct of the karmadactl_init task type.
type Init struct {
	Karmadactl        string   `hcl:"karmadactl,optional" doc:"Path of the karmadactl binary; default \"karmadactl\", looked up in PATH."`
	KarmadactlVersion string   `hcl:"karmadactl_version,optional" doc:"Version the binary must report; default \"v1.13.0\", the version flow's flags were checked against."`
	ExtraArgs         []string `hcl:"extra_args,optional" doc:"Further karmadactl init arguments; they must not set a flag an attribute maps."`
	InternetIPLookup  *bool    `hcl:"internet_ip_lookup,optional" doc:"Let karmadactl init ask https://myexternalip.com/raw for this machine's internet address, which it adds to the Karmada certificate; default true. false, for offline and loopback-only labs, sends init's HTTPS through a closed port on 127.0.0.1 (HTTPS_PROXY), except to the host cluster's API server, advertise_address and NO_PROXY; it needs advertise_address."`
	DeinitFirst       *bool    `hcl:"deinit_first,optional" doc:"Remove a half-done control plane (karmadactl deinit, then etcd's host data) before init; default true."`

	HostNetwork           []string `hcl:"host_network,optional" doc:"Deployments of init (karmada-controller-manager, karmada-aggregated-apiserver, ...) whose pods use the host cluster node's network (hostNetwork, with dnsPolicy ClusterFirstWithHostNet), so that they reach member API servers at addresses only the node serves, such as a port forwarded to the node's loopback; karmadactl init has no flag for it, so the task patches them after init and counts init as done only when they have it."`
	ControllerManagerArgs []string `hcl:"controller_manager_args,optional" doc:"Extra arguments for karmada-controller-manager, such as \"--feature-gates=Failover=true\"; karmadactl v1.13 init has no flag for them, so the task adds them to the Deployment's container command after init (replacing an argument with the same --name=) and counts init as done only when they are there."`

	Kubeconfig string `hcl:"kubeconfig,optional" doc:"Path of the host cluster's kubeconfig file; default $KUBECONFIG, then ~/.kube/config, as kubectl."`
	Context    string `hcl:"context,optional" doc:"Context in the host kubeconfig to use; default its current-context."`
	Namespace  string `hcl:"namespace,optional" doc:"Host namespace of the Karmada components (--namespace); default karmada-system."`

	KarmadaData       string         `hcl:"karmada_data,optional" doc:"Directory for the Karmada kubeconfig, certificates and CRDs (--karmada-data); default /etc/karmada."`
	KarmadaPKI        string         `hcl:"karmada_pki,optional" doc:"Directory for the Karmada certificates (--karmada-pki); default /etc/karmada/pki."`
	Port              int            `hcl:"port,optional" doc:"Node port of the Karmada API server service (--port); default 32443."`
	AdvertiseAddress  string         `hcl:"advertise_address,optional" doc:"IP address the Karmada API server advertises (--karmada-apiserver-advertise-address); default the master node's address."`
	CertExternalIP    []string       `hcl:"cert_external_ip,optional" doc:"Extra IP addresses in the Karmada certificate (--cert-external-ip, joined with commas)."`
	CertExternalDNS   []string       `hcl:"cert_external_dns,optional" doc:"Extra DNS names in the Karmada certificate (--cert-external-dns, joined with commas)."`
	CertValidity      tasks.Duration `hcl:"cert_validity_period,optional" doc:"Validity of the generated certificates as a duration, e.g. \"8760h\" (--cert-validity-period)."`
	CACertFile        string         `hcl:"ca_cert_file,optional" doc:"Root CA certificate that issues the Karmada certificates (--ca-cert-file); needs ca_key_file."`
	CAKeyFile         string         `hcl:"ca_key_file,optional" doc:"Private key of ca_cert_file (--ca-key-file)."`
	CRDs              string         `hcl:"crds,optional" doc:"Karmada CRDs tarball, a local path for offline installs or a URL (--crds); default the release's download URL."`
	WaitTimeout       tasks.Duration `hcl:"wait_timeout,optional" doc:"How long karmadactl waits for each component, a duration in whole seconds such as \"5m\" (--wait-component-ready-timeout, in seconds); \"0s\" waits forever; default 120s."`
	HostClusterDomain string         `hcl:"host_cluster_domain,optional" doc:"Cluster domain of the host cluster (--host-cluster-domain); default cluster.local."`

	PrivateImageRegistry   string   `hcl:"private_image_registry,optional" doc:"Registry to pull every image from (--private-image-registry), for offline installs."`
	KubeImageRegistry      string   `hcl:"kube_image_registry,optional" doc:"Registry of the Kubernetes images (--kube-image-registry)."`
	KubeImageMirrorCountry string   `hcl:"kube_image_mirror_country,optional" doc:"Country code of a Kubernetes image mirror, e.g. \"cn\" (--kube-image-mirror-country)."`
	KubeImageTag           string   `hcl:"kube_image_tag,optional" doc:"Tag of the Kubernetes images (--kube-image-tag); default v1.31.3."`
	ImagePullPolicy        string   `hcl:"image_pull_policy,optional" doc:"Always, Never or IfNotPresent (--image-pull-policy); default IfNotPresent."`
	ImagePullSecrets       []string `hcl:"image_pull_secrets,optional" doc:"Names of pull secrets in namespace (--image-pull-secrets, joined with commas)."`

	APIServerImage             string `hcl:"karmada_apiserver_image,optional" doc:"Image of the Karmada API server, a kube-apiserver (--karmada-apiserver-image)."`
	ControllerManagerImage     string `hcl:"karmada_controller_manager_image,optional" doc:"Image of karmada-controller-manager (--karmada-controller-manager-image)."`
	SchedulerImage             string `hcl:"karmada_scheduler_image,optional" doc:"Image of karmada-scheduler (--karmada-scheduler-image)."`
	WebhookImage               string `hcl:"karmada_webhook_image,optional" doc:"Image of karmada-webhook (--karmada-webhook-image)."`
	AggregatedAPIServerImage   string `hcl:"karmada_aggregated_apiserver_image,optional" doc:"Image of karmada-aggregated-apiserver (--karmada-aggregated-apiserver-image)."`
	KubeControllerManagerImage string `hcl:"karmada_kube_controller_manager_image,optional" doc:"Image of the Karmada kube-controller-manager (--karmada-kube-controller-manager-image)."`
	EtcdImage                  string `hcl:"etcd_image,optional" doc:"Image of etcd (--etcd-image)."`
	EtcdInitImage              string `hcl:"etcd_init_image,optional" doc:"Image of etcd's init container (--etcd-init-image)."`
	EtcdData                   string `hcl:"etcd_data,optional" doc:"Host path of etcd's data in hostPath mode (--etcd-data); default /var/lib/karmada-etcd."`
	EtcdStorageMode            string `hcl:"etcd_storage_mode,optional" doc:"emptyDir, hostPath or PVC (--etcd-storage-mode); default hostPath."`
	EtcdReplicas               int    `hcl:"etcd_replicas,optional" doc:"Number of etcd replicas, odd (--etcd-replicas); default 1."`
	EtcdPVCSize                string `hcl:"etcd_pvc_size,optional" doc:"Size of etcd's volume in PVC mode, e.g. \"5Gi\" (--etcd-pvc-size)."`
	StorageClassesName         string `hcl:"storage_classes_name,optional" doc:"Storage class of etcd's volume in PVC mode (--storage-classes-name)."`
	EtcdNodeSelectorLabels     string `hcl:"etcd_node_selector_labels,optional" doc:"Labels selecting etcd's node in hostPath mode, \"k=v,k2=v2\" (--etcd-node-selector-labels)."`
}

// initFlags is every flag karmadactl_init emits besides the subcommand.
var initFlags = flagTable{
	{"kubeconfig", "kubeconfig", kindString},
	{"context", "context", kindString},
	{"namespace", "namespace", kindString},
	{"karmada_data", "karmada-data", kindString},
	{"karmada_pki", "karmada-pki", kindString},
	{"port", "port", kindInt},
	{"advertise_address", "karmada-apiserver-advertise-address", kindString},
	{"cert_external_ip", "cert-external-ip", kindList},
	{"cert_external_dns", "cert-external-dns", kindList},
	{"cert_validity_period", "cert-validity-period", kindDuration},
	{"ca_cert_file", "ca-cert-file", kindString},
	{"ca_key_file", "ca-key-file", kindString},
	{"crds", "crds", kindString},
	{"wait_timeout", "wait-component-ready-timeout", kindSeconds},
	{"host_cluster_domain", "host-cluster-domain", kindString},
	{"private_image_registry", "private-image-registry", kindString},
	{"kube_image_registry", "kube-image-registry", kindString},
	{"kube_image_mirror_country", "kube-image-mirror-country", kindString},
	{"kube_image_tag", "kube-image-tag", kindString},
	{"image_pull_policy", "image-pull-policy", kindString},
	{"image_pull_secrets", "image-pull-secrets", kindList},
	{"karmada_apiserver_image", "karmada-apiserver-image", kindString},
	{"karmada_controller_manager_image", "karmada-controller-manager-image", kindString},
	{"karmada_scheduler_image", "karmada-scheduler-image", kindString},
	{"karmada_webhook_image", "karmada-webhook-image", kindString},
	{"karmada_aggregated_apiserver_image", "karmada-aggregated-apiserver-image", kindString},
	{"karmada_kube_controller_manager_image", "karmada-kube-controller-manager-image", kindString},
	{"etcd_image", "etcd-image", kindString},
	{"etcd_init_image", "etcd-init-image", kindString},
	{"etcd_data", "etcd-data", kindString},
	{"etcd_storage_mode", "etcd-storage-mode", kindString},
	{"etcd_replicas", "etcd-replicas", kindInt},
	{"etcd_pvc_size", "etcd-pvc-size", kindString},
	{"storage_classes_name", "storage-classes-name", kindString},
	{"etcd_node_selector_labels", "etcd-node-selector-labels", kindString},
}

// deinitFlags is every flag of the `karmadactl deinit` that karmadactl_init runs
// before a retry, read from Init's attributes; --force is always added so that
// deinit does not ask for confirmation.
var deinitFlags = flagTable{
	{"kubeconfig", "kubeconfig", kindString},
	{"context", "context", kindString},
	{"namespace", "namespace", kindString},
}

func initType() tasks.Type {
	return tasks.Type{
		Name:    "karmadactl_init",
		Summary: "Install a Karmada control plane on a host cluster with karmadactl init",
		Doc: `Runs karmadactl init against the host cluster (kubeconfig, context). Each attribute
maps to one karmadactl init flag; extra_args carries anything else, and
controller_manager_args go into karmada-controller-manager's command after init.

The control plane counts as done, and the task changes nothing and says "already
present", only when all of it is: karmada_data/karmada-apiserver.config exists, the
Karmada API server it points at answers /readyz with ok and serves the cluster API
(clusters.cluster.karmada.io, backed by karmada-aggregated-apiserver), and in the
host namespace every Deployment and StatefulSet is fully ready, among them those
karmadactl init creates (karmada-apiserver, karmada-aggregated-apiserver,
kube-controller-manager, karmada-controller-manager, karmada-scheduler,
karmada-webhook and etcd). A complete control plane is never torn down, on a retry
neither. karmadactl writes the kubeconfig and starts the API server before the rest,
so anything less while the namespace exists is a half-done init, which karmadactl
init cannot install over: the task names what is missing, runs karmadactl deinit
--force with the same kubeconfig, context and namespace, and, with etcd in hostPath
mode, removes etcd_data/member (etcd's data) on the machine flow runs on; then it
installs again. deinit_first = false skips both. deinit keeps the namespace and
karmada_data.

When only controller_manager_args or host_network are missing from a complete
control plane, the task adds them and waits until the changed Deployments have
rolled out.`,
		New: func() tasks.Task { return &Init{} },
		Outputs: []tasks.Output{
			{Name: "kubeconfig", Type: cty.String, Doc: "Path of the Karmada API server's kubeconfig, karmada_data/karmada-apiserver.config.", Clean: true},
			{Name: "karmada_data", Type: cty.String, Doc: "The absolute karmada_data directory.", Clean: true},
		},
		Undo: "flow destroy removes the control plane with karmadactl deinit --force (kubeconfig, context, namespace), then etcd's data in etcd_data (hostPath mode), which deinit leaves; a control plane whose namespace is gone is already undone.",
		Example: `task "karmadactl_init" "karmada" {
  kubeconfig             = "/etc/flow/host.kubeconfig"
  karmada_data           = "/var/lib/flow/karmada"
  karmada_pki            = "/var/lib/flow/karmada/pki"
  crds                   = "/var/lib/flow/karmada/crds.tar.gz"
  advertise_address      = "10.0.3.10"
  cert_external_ip       = ["10.0.3.10", "127.0.0.1"]
  private_image_registry = "registry.local:5000/karmada"
  wait_timeout           = "5m"
}`,
	}
}

var (
	imagePullPolicies = []string{"Always", "Never", "IfNotPresent"}
	etcdStorageModes  = []string{"emptyDir", "hostPath", "PVC"}
)

// Validate checks durations, addresses, image references, enumerations and extra_args.
func (i *Init) Validate() error {
	if err := validateVersion(i.KarmadactlVersion); err != nil {
		return err
	}
	if err := initFlags.validate(i, i.ExtraArgs, "force"); err != nil {
		return err
	}
	if i.Port < 0 || i.Port > 65535 {
		return attrErr("port", "%d is not a port number", i.Port)
	}
	if i.EtcdReplicas < 0 || (i.EtcdReplicas > 0 && i.EtcdReplicas%2 == 0) {
		return attrErr("etcd_replicas", "%d: etcd needs an odd number of replicas", i.EtcdReplicas)
	}
	if i.InternetIPLookup != nil && !*i.InternetIPLookup && i.AdvertiseAddress == "" {
		return attrErr("internet_ip_lookup", "false needs advertise_address: init reaches the Karmada API server there, and every other address would go to the closed proxy")
	}
	if i.AdvertiseAddress != "" && net.ParseIP(i.AdvertiseAddress) == nil {
		return attrErr("advertise_address", "%q is not an IP address", i.AdvertiseAddress)
	}
	for _, ip := range i.CertExternalIP {
		if net.ParseIP(ip) == nil {
			return attrErr("cert_external_ip", "%q is not an IP address", ip)
		}
	}
	if (i.CACertFile == "") != (i.CAKeyFile == "") {
		return attrErr("ca_key_file", "ca_cert_file and ca_key_file go together; set both or neither")
	}
	if i.ImagePullPolicy != "" && !slices.Contains(imagePullPolicies, i.ImagePullPolicy) {
		return attrErr("image_pull_policy", "%q is not one of %v", i.ImagePullPolicy, imagePullPolicies)
	}
	if i.EtcdStorageMode != "" && !slices.Contains(etcdStorageModes, i.EtcdStorageMode) {
		return attrErr("etcd_storage_mode", "%q is not one of %v", i.EtcdStorageMode, etcdStorageModes)
	}
	if err := validateArgs("controller_manager_args", i.ControllerManagerArgs); err != nil {
		return err
	}
	if err := validateHostNetwork(i.HostNetwork); err != nil {
		return err
	}
	return validateImages(i, initFlags)
}

// validateArgs checks that each argument of attr is a --flag and that no flag is
// set twice, which would never be found in place.
func validateArgs(attr string, args []string) error {
	seen := map[string]bool{}
	for _, arg := range args {
		if !strings.HasPrefix(arg, "--") || len(arg) == 2 {
			return attrErr(attr, "%q is not a --flag", arg)
		}
		name, _, _ := strings.Cut(arg, "=")
		if seen[name] {
			return attrErr(attr, "%s is set twice", name)
		}
		seen[name] = true
	}
	return nil
}

// validateHostNetwork checks that each name is one of init's Deployments, once.
func validateHostNetwork(names []string) error {
	for n, name := range names {
		if !slices.Contains(planeDeployments, name) {
			return attrErr("host_network", "%q is not one of karmadactl init's Deployments %v", name, planeDeployments)
		}
		if slices.Contains(names[:n], name) {
			return attrErr("host_network", "%s is named twice", name)
		}
	}
	return nil
}

// validateImages checks that every attribute named *_image holds an image reference.
func validateImages(task any, table flagTable) error {
	fields := fieldsByAttr(task)
	for _, f := range table {
		v := fields[f.attr]
		if !strings.HasSuffix(f.attr, "_image") || v.String() == "" {
			continue
		}
		if _, err := name.ParseReference(v.String()); err != nil {
			return attrErr(f.attr, "%q is not an image reference: %w", v.String(), err)
		}
	}
	return nil
}

// dataDir is karmada_data or karmadactl's default.
func (i *Init) dataDir() string {
	if i.KarmadaData == "" {
		return defaultKarmadaData
	}
	return i.KarmadaData
}

// namespace is the namespace attribute or karmadactl's default.
func (i *Init) namespace() string {
	if i.Namespace == "" {
		return defaultNamespace
	}
	return i.Namespace
}

var _ tasks.Task = (*Init)(nil)
