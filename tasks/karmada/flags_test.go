package karmada

import (
	"context"
	"os/exec"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flowdev/flow/tasks"
	"github.com/flowdev/flow/tasks/kube/kubetest"
)

// tableCase ties a flag table to the subcommand it is for.
type tableCase struct {
	command []string   // subcommand, as for --help
	table   flagTable  // the flags flow maps from attributes
	fixed   []string   // flags flow always adds
	task    tasks.Task // the struct the table reads
	other   []string   // attributes that are not flags (positional or flow's own)
}

var tableCases = []tableCase{
	{[]string{"init"}, initFlags, nil, &Init{}, []string{"karmadactl", "karmadactl_version", "extra_args", "deinit_first", "controller_manager_args", "host_network", "internet_ip_lookup"}},
	{[]string{"deinit"}, deinitFlags, []string{"force"}, &Init{}, nil},
	{[]string{"join"}, joinFlags, nil, &Join{}, []string{"karmadactl", "karmadactl_version", "extra_args", "cluster", "api_endpoint"}},
	{[]string{"unjoin"}, unjoinFlags, []string{"wait"}, &Join{}, nil},
	{[]string{"token", "create"}, tokenFlags, []string{"print-register-command"}, &Token{}, []string{"karmadactl", "karmadactl_version", "extra_args"}},
	{[]string{"register"}, registerFlags, nil, &Registration{}, []string{"karmadactl", "karmadactl_version", "extra_args", "api_endpoint", "agent_api_endpoint", "cluster_api_endpoint", "agent_args", "karmada_kubeconfig"}},
	{[]string{"unregister"}, unregisterFlags, []string{"wait"}, &Registration{}, nil},
}

// Every table entry reads an attribute of the right Go type, no attribute or flag
// is mapped twice, and every attribute of a type is a flag or one of flow's own.
func TestFlagTablesMatchStructs(t *testing.T) {
	for _, c := range tableCases {
		t.Run(strings.Join(c.command, "_"), func(t *testing.T) {
			fields := fieldsByAttr(c.task)
			attrs, flags := map[string]bool{}, map[string]bool{}
			for _, f := range c.table {
				v, ok := fields[f.attr]
				switch {
				case !ok:
					t.Errorf("attribute %q: not in %T", f.attr, c.task)
				case v.Type() != f.kind.goType():
					t.Errorf("attribute %q: field type %s, flag kind wants %s", f.attr, v.Type(), f.kind.goType())
				case attrs[f.attr] || flags[f.name]:
					t.Errorf("attribute %q or flag --%s mapped twice", f.attr, f.name)
				}
				attrs[f.attr], flags[f.name] = true, true
			}
			if c.other == nil {
				return // a table over part of a type's attributes
			}
			for name := range fields {
				if !attrs[name] && !slices.Contains(c.other, name) {
					t.Errorf("attribute %q is neither in the flag table nor one of flow's own", name)
				}
			}
		})
	}
}

var helpFlag = regexp.MustCompile(`(?m)^\s+(?:-[a-zA-Z], )?--([a-z0-9-]+)=`)

// The guarantee that flow never emits a flag the pinned karmadactl lacks: every
// flag of every table (and every flag flow adds itself) is in the pinned binary's
// --help for that subcommand.
func TestFlagTablesInPinnedHelp(t *testing.T) {
	bin := kubetest.Binary(t, "karmadactl")
	for _, c := range tableCases {
		t.Run(strings.Join(c.command, "_"), func(t *testing.T) {
			help, err := exec.Command(bin, append(c.command, "--help")...).Output()
			if err != nil {
				t.Fatalf("karmadactl %s --help: %v", strings.Join(c.command, " "), err)
			}
			have := map[string]bool{}
			for _, m := range helpFlag.FindAllStringSubmatch(string(help), -1) {
				have[m[1]] = true
			}
			if len(have) < 5 {
				t.Fatalf("parsed only %v from the help:\n%s", have, help)
			}
			for _, f := range c.table {
				if !have[f.name] {
					t.Errorf("attribute %s maps to --%s, which karmadactl %s %s does not have", f.attr, f.name, kubetest.KarmadaVersion, strings.Join(c.command, " "))
				}
			}
			for _, name := range c.fixed {
				if !have[name] {
					t.Errorf("flow adds --%s, which karmadactl %s does not have", name, strings.Join(c.command, " "))
				}
			}
		})
	}
	if PinnedVersion != kubetest.KarmadaVersion {
		t.Errorf("PinnedVersion %s differs from kubetest.KarmadaVersion %s", PinnedVersion, kubetest.KarmadaVersion)
	}
}

// The argument lists built from a full attribute set, flag by flag.
func TestArgs(t *testing.T) {
	yes := true
	cases := []struct {
		name  string
		table flagTable
		task  tasks.Task
		want  []string
	}{
		{"init", initFlags, &Init{
			Karmadactl: "/bin/karmadactl", KarmadactlVersion: "v1.13.0", ExtraArgs: []string{"--etcd-priority-class=x"}, DeinitFirst: &yes,
			Kubeconfig: "/h/kc", Context: "host", Namespace: "karmada",
			KarmadaData: "/d", KarmadaPKI: "/d/pki", Port: 5443, AdvertiseAddress: "10.0.0.1",
			CertExternalIP: []string{"10.0.0.1", "127.0.0.1"}, CertExternalDNS: []string{"localhost", "karmada.lab"},
			CertValidity: "8760h", CACertFile: "/ca.crt", CAKeyFile: "/ca.key", CRDs: "/crds.tar.gz",
			WaitTimeout: "5m", HostClusterDomain: "lab.local",
			PrivateImageRegistry: "reg:5000/k", KubeImageRegistry: "reg:5000/kube", KubeImageMirrorCountry: "cn",
			KubeImageTag: "v1.31.4", ImagePullPolicy: "Never", ImagePullSecrets: []string{"a", "b"},
			APIServerImage: "i/apiserver:1", ControllerManagerImage: "i/cm:1", SchedulerImage: "i/s:1",
			WebhookImage: "i/w:1", AggregatedAPIServerImage: "i/aa:1", KubeControllerManagerImage: "i/kcm:1",
			EtcdImage: "i/etcd:1", EtcdInitImage: "i/alpine:1", EtcdData: "/var/etcd", EtcdStorageMode: "PVC",
			EtcdReplicas: 3, EtcdPVCSize: "1Gi", StorageClassesName: "local", EtcdNodeSelectorLabels: "a=b,c=d",
		}, []string{
			"--kubeconfig=/h/kc", "--context=host", "--namespace=karmada", "--karmada-data=/d", "--karmada-pki=/d/pki",
			"--port=5443", "--karmada-apiserver-advertise-address=10.0.0.1",
			"--cert-external-ip=10.0.0.1,127.0.0.1", "--cert-external-dns=localhost,karmada.lab",
			"--cert-validity-period=8760h", "--ca-cert-file=/ca.crt", "--ca-key-file=/ca.key", "--crds=/crds.tar.gz",
			"--wait-component-ready-timeout=300", "--host-cluster-domain=lab.local",
			"--private-image-registry=reg:5000/k", "--kube-image-registry=reg:5000/kube", "--kube-image-mirror-country=cn",
			"--kube-image-tag=v1.31.4", "--image-pull-policy=Never", "--image-pull-secrets=a,b",
			"--karmada-apiserver-image=i/apiserver:1", "--karmada-controller-manager-image=i/cm:1",
			"--karmada-scheduler-image=i/s:1", "--karmada-webhook-image=i/w:1", "--karmada-aggregated-apiserver-image=i/aa:1",
			"--karmada-kube-controller-manager-image=i/kcm:1", "--etcd-image=i/etcd:1", "--etcd-init-image=i/alpine:1",
			"--etcd-data=/var/etcd", "--etcd-storage-mode=PVC", "--etcd-replicas=3", "--etcd-pvc-size=1Gi",
			"--storage-classes-name=local", "--etcd-node-selector-labels=a=b,c=d",
		}},
		{"init minimal", initFlags, &Init{}, nil},
		{"init wait forever", initFlags, &Init{WaitTimeout: "0s"}, []string{"--wait-component-ready-timeout=0"}},
		{"deinit", deinitFlags, &Init{Kubeconfig: "/h/kc", Context: "host", Namespace: "karmada", Port: 1}, []string{
			"--kubeconfig=/h/kc", "--context=host", "--namespace=karmada",
		}},
		{"join", joinFlags, &Join{
			Cluster: "member1", Kubeconfig: "/k/kc", Context: "karmada", ClusterKubeconfig: "/m/kc", ClusterContext: "m1",
			ClusterNamespace: "members", ClusterProvider: "lxd", ClusterRegion: "lab", ClusterZones: []string{"a", "b"},
			KarmadaAs: "admin", KarmadaAsGroups: []string{"g1", "g2"}, KarmadaAsUID: "42",
		}, []string{
			"--kubeconfig=/k/kc", "--karmada-context=karmada", "--cluster-kubeconfig=/m/kc", "--cluster-context=m1",
			"--cluster-namespace=members", "--cluster-provider=lxd", "--cluster-region=lab", "--cluster-zones=a,b",
			"--karmada-as=admin", "--karmada-as-group=g1", "--karmada-as-group=g2", "--karmada-as-uid=42",
		}},
		{"token", tokenFlags, &Token{
			Kubeconfig: "/k/kc", Context: "karmada", TTL: "2h", Description: "lab members",
			Groups: []string{"system:bootstrappers:karmada:default-cluster-token"}, Usages: []string{"signing", "authentication"},
		}, []string{
			"--kubeconfig=/k/kc", "--karmada-context=karmada", "--ttl=2h", "--description=lab members",
			"--groups=system:bootstrappers:karmada:default-cluster-token", "--usages=signing,authentication",
		}},
		{"register", registerFlags, &Registration{
			APIEndpoint: "10.0.0.1:5443", Token: "abcdef.0123456789abcdef", CACertHash: "sha256:00ff", UnsafeSkipCA: true,
			ClusterName: "member2", Kubeconfig: "/m/kc", Context: "m2", Namespace: "agents",
			AgentImage: "reg:5000/karmada-agent:v1.13.0", AgentReplicas: 2, DiscoveryTimeout: "1m", CertRotation: true,
			CertExpiration: "24h", ProxyServer: "http://127.0.0.1:3128", ClusterNamespace: "members",
			ClusterProvider: "lxd", ClusterRegion: "lab", ClusterZones: []string{"a"},
		}, []string{
			"--token=abcdef.0123456789abcdef", "--discovery-token-ca-cert-hash=sha256:00ff",
			"--discovery-token-unsafe-skip-ca-verification", "--cluster-name=member2", "--kubeconfig=/m/kc",
			"--context=m2", "--namespace=agents", "--karmada-agent-image=reg:5000/karmada-agent:v1.13.0",
			"--karmada-agent-replicas=2", "--discovery-timeout=1m", "--enable-cert-rotation",
			"--cert-expiration-seconds=86400", "--proxy-server-address=http://127.0.0.1:3128",
			"--cluster-namespace=members", "--cluster-provider=lxd", "--cluster-region=lab", "--cluster-zones=a",
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := c.table.args(c.task)
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("args:\n got %q\nwant %q", got, c.want)
			}
		})
	}
}

// waitFlag gives karmadactl what is left of the task's timeout, or five minutes.
func TestWaitFlag(t *testing.T) {
	if got := waitFlag(context.Background()); got != "--wait=5m0s" {
		t.Errorf("without a deadline: %s", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if got := waitFlag(ctx); got != "--wait=1m30s" {
		t.Errorf("with 90 s left: %s", got)
	}
}
