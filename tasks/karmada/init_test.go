package karmada

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/flowdev/flow/tasks/taskstest"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// controllerManagerCommand is the command karmadactl v1.13 init gives
// karmada-controller-manager, in part.
var controllerManagerCommand = []string{
	"/bin/karmada-controller-manager", "--kubeconfig=/etc/karmada/config/karmada.config",
	"--cluster-status-update-frequency=10s", "--v=4",
}

// createPlane creates, on the host (s.member), namespace ns with the Deployments
// and the StatefulSet karmadactl init creates, each with a status that says ready
// except those named in notReady, which have no ready replica; skip names one not
// to create. Nothing runs them: the status is set through the status subresource.
func (s servers) createPlane(t *testing.T, ns string, notReady []string, skip string) {
	t.Helper()
	client := s.member.Clientset(t)
	if _, err := client.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, name := range planeDeployments {
		if name == skip {
			continue
		}
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: podTemplate(name),
		}}
		if name == controllerManagerDeployment {
			d.Spec.Template.Spec.Containers[0].Command = controllerManagerCommand
		}
		d, err := client.AppsV1().Deployments(ns).Create(t.Context(), d, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1}
		if slices.Contains(notReady, name) {
			d.Status.ReadyReplicas, d.Status.AvailableReplicas = 0, 0
		}
		if _, err := client.AppsV1().Deployments(ns).UpdateStatus(t.Context(), d, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range planeStatefulSets {
		if name == skip {
			continue
		}
		ss := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: appsv1.StatefulSetSpec{
			ServiceName: name,
			Selector:    &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template:    podTemplate(name),
		}}
		ss, err := client.AppsV1().StatefulSets(ns).Create(t.Context(), ss, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ss.Status = appsv1.StatefulSetStatus{ObservedGeneration: ss.Generation, Replicas: 1, ReadyReplicas: 1, CurrentReplicas: 1, UpdatedReplicas: 1}
		if slices.Contains(notReady, name) {
			ss.Status.ReadyReplicas = 0
		}
		if _, err := client.AppsV1().StatefulSets(ns).UpdateStatus(t.Context(), ss, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

func podTemplate(name string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: name, Image: "registry.local/" + name + ":v1.13.0"}}},
	}
}

// setHostNetwork gives the Deployments names in ns the node's network and
// reports them rolled out, as the task would have left them.
func (s servers) setHostNetwork(t *testing.T, ns string, names []string) {
	t.Helper()
	client := s.member.Clientset(t).AppsV1().Deployments(ns)
	for _, name := range names {
		d, err := client.Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		d.Spec.Template.Spec.HostNetwork, d.Spec.Template.Spec.DNSPolicy = true, corev1.DNSClusterFirstWithHostNet
		if d, err = client.Update(t.Context(), d, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1}
		if _, err := client.UpdateStatus(t.Context(), d, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// simulateRollout stands in for the deployment controller and the kubelet: once
// Deployment name in ns has a generation its status has not observed, it reports
// that generation rolled out and ready.
func (s servers) simulateRollout(t *testing.T, ns, name string) {
	keepRolledOut(t.Context(), s.member.Clientset(t).AppsV1().Deployments(ns), name)
}

// karmadaData returns a karmada_data directory whose kubeconfig points at the
// Karmada API server of the tests, and the kubeconfig's path.
func (s servers) karmadaData(t *testing.T) (dir, config string) {
	t.Helper()
	dir = t.TempDir()
	config = filepath.Join(dir, "karmada-apiserver.config")
	if err := os.WriteFile(config, []byte(mustRead(t, s.karmada.Kubeconfig)), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir, config
}

// etcdData returns an etcd_data directory holding etcd's member directory and a
// file beside it that the cleanup must leave alone.
func etcdData(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, sub := range []string{"member/snap", "member/wal"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"member/wal/0.wal", "keep"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// Init with the real binary over a complete control plane: already present, only
// the version is checked, on attempt 2 too.
func (s servers) testInitPresent(t *testing.T) {
	const ns = "kinit-present"
	s.createPlane(t, ns, nil, "")
	bin, record := recordingKarmadactl(t, s.karmadactl)
	data, config := s.karmadaData(t)
	env, buf := taskstest.NewEnv(t)
	env.Attempt = 2 // a complete control plane is never torn down
	init := &Init{Karmadactl: bin, Kubeconfig: s.member.Kubeconfig, Namespace: ns, KarmadaData: data, EtcdData: etcdData(t)}
	out, err := init.Run(t.Context(), env)
	if err != nil {
		t.Fatalf("%v\n%s", err, buf)
	}
	if out["kubeconfig"].AsString() != config || out["karmada_data"].AsString() != data {
		t.Errorf("outputs = %v", out)
	}
	if !strings.Contains(buf.String(), "karmada control plane at "+s.karmada.URL+" already present") {
		t.Errorf("printed:\n%s", buf)
	}
	if got := subcommands(t, record); strings.Join(got, " ") != "version" {
		t.Errorf("karmadactl calls = %q, want only version", got)
	}
	if _, err := os.Stat(filepath.Join(init.EtcdData, "member")); err != nil {
		t.Errorf("etcd's data of a complete control plane: %v", err)
	}
}

// Init decides by the whole control plane: complete is left alone, anything less
// is removed (deinit, then etcd's member directory) and installed again, and a
// complete one without controller_manager_args gets them with no init.
func (s servers) testInitPlane(t *testing.T) {
	const args = "--feature-gates=Failover=true"
	cases := []struct {
		name      string
		namespace string
		notReady  []string
		skip      string
		karmada   string   // kubeconfig of the Karmada API server; default s.karmada's
		cmArgs    []string // controller_manager_args
		hostNet   []string // host_network
		command   []string // karmada-controller-manager's command after; nil: unchanged, no rollout
		want      string   // karmadactl calls
		printed   []string
		etcdGone  bool
		hostNetOn bool // the Deployments of hostNet use the node's network before the run
	}{
		{name: "complete", namespace: "kplane-complete", cmArgs: []string{"--v=4"}, want: "version",
			printed: []string{"already present"}},
		{name: "deployment not ready", namespace: "kplane-scheduler", notReady: []string{"karmada-scheduler"}, want: "version deinit init",
			printed:  []string{"karmadactl init: half-done (deployment karmada-scheduler 0/1 ready); removing it and installing again", "karmadactl init: removed etcd's data "},
			etcdGone: true},
		{name: "etcd absent", namespace: "kplane-etcd", skip: "etcd", want: "version deinit init",
			printed: []string{"karmadactl init: half-done (statefulset etcd absent); removing it"}, etcdGone: true},
		{name: "no cluster API", namespace: "kplane-api", karmada: s.member.Kubeconfig, want: "version deinit init",
			printed: []string{"karmadactl init: half-done (cluster API: "}, etcdGone: true},
		{name: "controller_manager_args missing", namespace: "kplane-args", cmArgs: []string{args, "--v=2"}, want: "version",
			command: []string{controllerManagerCommand[0], controllerManagerCommand[1], controllerManagerCommand[2], "--v=2", args},
			printed: []string{"karmada-controller-manager: arguments " + args + " --v=2 set; waiting for the rollout", "karmada-controller-manager rolled out"}},
		{name: "host_network missing", namespace: "kplane-hostnet", cmArgs: []string{args}, hostNet: []string{"karmada-aggregated-apiserver", controllerManagerDeployment}, want: "version",
			command: append(slices.Clone(controllerManagerCommand), args),
			printed: []string{
				"karmada-aggregated-apiserver: host network set; waiting for the rollout",
				"karmada-controller-manager: arguments " + args + " set, host network set; waiting for the rollout",
				"karmada-aggregated-apiserver rolled out", "karmada-controller-manager rolled out"}},
		{name: "host_network present", namespace: "kplane-hostnet-on", hostNet: []string{"karmada-webhook"}, hostNetOn: true, want: "version",
			printed: []string{"already present"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s.createPlane(t, c.namespace, c.notReady, c.skip)
			bin, record := fakeKarmadactl(t, "v1.13.0", map[string]string{"deinit": "echo deinit done", "init": "echo 'Karmada is installed successfully.'"})
			data, config := s.karmadaData(t)
			if c.karmada != "" {
				if err := os.WriteFile(config, []byte(mustRead(t, c.karmada)), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			etcd := etcdData(t)
			if c.hostNetOn {
				s.setHostNetwork(t, c.namespace, c.hostNet)
			}
			if c.command != nil {
				go s.simulateRollout(t, c.namespace, controllerManagerDeployment)
			}
			if !c.hostNetOn {
				for _, name := range c.hostNet {
					if name != controllerManagerDeployment {
						go s.simulateRollout(t, c.namespace, name)
					}
				}
			}
			env, buf := taskstest.NewEnv(t)
			init := &Init{Karmadactl: bin, Kubeconfig: s.member.Kubeconfig, Namespace: c.namespace, KarmadaData: data, EtcdData: etcd, ControllerManagerArgs: c.cmArgs, HostNetwork: c.hostNet}
			if err := init.Validate(); err != nil {
				t.Fatal(err)
			}
			if _, err := init.Run(t.Context(), env); err != nil {
				t.Fatalf("%v\n%s", err, buf)
			}
			if got := strings.Join(subcommands(t, record), " "); got != c.want {
				t.Errorf("karmadactl calls = %q, want %q\n%s", got, c.want, buf)
			}
			for _, p := range c.printed {
				if !strings.Contains(buf.String(), p) {
					t.Errorf("printed:\n%s\nwant %q", buf, p)
				}
			}
			if _, err := os.Stat(filepath.Join(etcd, "member")); os.IsNotExist(err) != c.etcdGone {
				t.Errorf("etcd's member directory: %v, want removed %v", err, c.etcdGone)
			}
			if _, err := os.Stat(filepath.Join(etcd, "keep")); err != nil {
				t.Errorf("the file beside etcd's member directory: %v", err)
			}
			d, err := s.member.Clientset(t).AppsV1().Deployments(c.namespace).Get(t.Context(), controllerManagerDeployment, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			want := controllerManagerCommand
			if c.command != nil {
				want = c.command
			}
			if got := d.Spec.Template.Spec.Containers[0].Command; !slices.Equal(got, want) {
				t.Errorf("karmada-controller-manager command = %q, want %q", got, want)
			}
			for _, name := range c.hostNet {
				d, err := s.member.Clientset(t).AppsV1().Deployments(c.namespace).Get(t.Context(), name, metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if spec := d.Spec.Template.Spec; !spec.HostNetwork || spec.DNSPolicy != corev1.DNSClusterFirstWithHostNet {
					t.Errorf("%s: hostNetwork %v, dnsPolicy %q; want true, ClusterFirstWithHostNet", name, spec.HostNetwork, spec.DNSPolicy)
				}
			}
			// One pod at a time: the surge pod of a rolling update would never be
			// scheduled next to the old one on a one-node host (required anti-affinity).
			if ru := d.Spec.Strategy.RollingUpdate; c.command != nil && (ru == nil || ru.MaxSurge.IntValue() != 0 || ru.MaxUnavailable.IntValue() != 1) {
				t.Errorf("karmada-controller-manager strategy = %+v, want maxSurge 0, maxUnavailable 1", d.Spec.Strategy)
			}
		})
	}
}

func TestWithArgs(t *testing.T) {
	cmd := []string{"/bin/cm", "--kubeconfig=/k", "--v=4", "--leader-elect"}
	cases := []struct {
		name string
		args []string
		want []string // nil: nothing to change
	}{
		{"none", nil, nil},
		{"present", []string{"--v=4", "--leader-elect"}, nil},
		{"added", []string{"--feature-gates=Failover=true"}, []string{"/bin/cm", "--kubeconfig=/k", "--v=4", "--leader-elect", "--feature-gates=Failover=true"}},
		{"replaced", []string{"--v=2"}, []string{"/bin/cm", "--kubeconfig=/k", "--v=2", "--leader-elect"}},
		{"bare flag replaced", []string{"--leader-elect=false"}, []string{"/bin/cm", "--kubeconfig=/k", "--v=4", "--leader-elect=false"}},
		{"prefix is not a name", []string{"--kube=x"}, []string{"/bin/cm", "--kubeconfig=/k", "--v=4", "--leader-elect", "--kube=x"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := withArgs(cmd, c.args); !slices.Equal(got, c.want) {
				t.Errorf("withArgs(%q) = %q, want %q", c.args, got, c.want)
			}
		})
	}
}

// Destroy runs deinit when the host has the control plane's namespace and says
// already absent when it has not; either way etcd's member directory goes and the
// rest of etcd_data stays.
func (s servers) testInitDestroy(t *testing.T) {
	for _, c := range []struct {
		name, namespace string
		present         bool
		want, printed   string
	}{
		{"present", "kplane-destroy", true, "version deinit", "karmadactl init: removed etcd's data "},
		{"absent", "kplane-destroyed", false, "", "namespace kplane-destroyed already absent"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.present {
				s.createPlane(t, c.namespace, nil, "")
			}
			bin, record := fakeKarmadactl(t, "v1.13.0", map[string]string{"deinit": "echo deinit done"})
			etcd := etcdData(t)
			env, buf := taskstest.NewEnv(t)
			init := &Init{Karmadactl: bin, Kubeconfig: s.member.Kubeconfig, Namespace: c.namespace, EtcdData: etcd}
			if err := init.Destroy(t.Context(), env, nil); err != nil {
				t.Fatalf("%v\n%s", err, buf)
			}
			if got := strings.Join(subcommands(t, record), " "); got != c.want {
				t.Errorf("karmadactl calls = %q, want %q\n%s", got, c.want, buf)
			}
			if !strings.Contains(buf.String(), c.printed) {
				t.Errorf("printed:\n%s\nwant %q", buf, c.printed)
			}
			if _, err := os.Stat(filepath.Join(etcd, "member")); !os.IsNotExist(err) {
				t.Errorf("etcd's member directory survived: %v", err)
			}
			if _, err := os.Stat(filepath.Join(etcd, "keep")); err != nil {
				t.Errorf("the file beside etcd's member directory: %v", err)
			}
		})
	}
}
