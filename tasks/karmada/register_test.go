package karmada

import (
	"encoding/base64"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flowdev/flow/tasks/taskstest"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// testKey stands in for the agent's client key; no output may show it.
const testKey = "-----BEGIN EC PRIVATE KEY-----\nFLOWTESTKEYMATERIAL0123456789\n-----END EC PRIVATE KEY-----\n"

// createAgent creates, on the member, namespace ns with what karmadactl register
// leaves there for flow to look at: the agent's kubeconfig Secret, whose server is
// server, and the Deployment karmada-agent.
func (s servers) createAgent(t *testing.T, ns, server string) {
	t.Helper()
	client := s.member.Clientset(t)
	if _, err := client.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["karmada-apiserver"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: []byte("dummy CA")}
	kc.AuthInfos["karmada-agent"] = &clientcmdapi.AuthInfo{ClientCertificateData: []byte("dummy cert"), ClientKeyData: []byte(testKey)}
	kc.Contexts["karmada"] = &clientcmdapi.Context{Cluster: "karmada-apiserver", AuthInfo: "karmada-agent"}
	kc.CurrentContext = "karmada"
	data, err := clientcmd.Write(*kc)
	if err != nil {
		t.Fatal(err)
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: agentKubeconfigSecret, Namespace: ns},
		Data:       map[string][]byte{agentKubeconfigSecret: data},
	}
	if _, err := client.CoreV1().Secrets(ns).Create(t.Context(), secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{"app": agentDeployment}
	agent := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: agentDeployment, Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: agentDeployment, Image: "docker.io/karmada/karmada-agent:v1.13.0",
					Command: []string{"/bin/karmada-agent", "--cluster-name=member4", "--cluster-api-endpoint=https://127.0.0.1:16444"}}}},
			},
		},
	}
	created, err := client.AppsV1().Deployments(ns).Create(t.Context(), agent, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	setAvailable(t, s, created, 1)
}

// setAvailable gives a Deployment the status a deployment controller would, with
// available replicas: the test API servers run none.
func setAvailable(t *testing.T, s servers, d *appsv1.Deployment, available int32) {
	t.Helper()
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: available, ReadyReplicas: available, AvailableReplicas: available}
	if _, err := s.member.Clientset(t).AppsV1().Deployments(d.Namespace).UpdateStatus(t.Context(), d, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// Register over remains: a Secret and ServiceAccount without the Deployment, or a
// Deployment that never becomes available (a register that failed after its
// Karmada side was removed), are deleted, then karmadactl register runs.
func (s servers) testRegisterHalfDone(t *testing.T) {
	defer func(w time.Duration) { agentAvailableWait = w }(agentAvailableWait)
	agentAvailableWait = time.Second
	client := s.member.Clientset(t)
	for _, c := range []struct {
		ns, why     string
		unavailable bool
	}{
		{"kreg-leftovers", "secret karmada-kubeconfig or serviceaccount karmada-agent-sa without deployment karmada-agent", false},
		{"kreg-unavailable", "deployment karmada-agent has no available replica after 1s", true},
	} {
		t.Run(c.ns, func(t *testing.T) {
			s.createAgent(t, c.ns, "https://127.0.0.1:5443")
			sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: agentServiceAccount, Namespace: c.ns}}
			if _, err := client.CoreV1().ServiceAccounts(c.ns).Create(t.Context(), sa, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			d, err := client.AppsV1().Deployments(c.ns).Get(t.Context(), agentDeployment, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if c.unavailable {
				setAvailable(t, s, d, 0)
			} else if err := client.AppsV1().Deployments(c.ns).Delete(t.Context(), agentDeployment, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			bin, record := fakeKarmadactl(t, "v1.13.0", map[string]string{"register": "echo registered"})
			env, buf := taskstest.NewEnv(t)
			reg := &Registration{Karmadactl: bin, APIEndpoint: "127.0.0.1:5443", Token: goodToken, CACertHash: "sha256:00",
				ClusterName: "member5", Kubeconfig: s.member.Kubeconfig, Namespace: c.ns}
			if _, err := reg.Run(t.Context(), env); err != nil {
				t.Fatalf("%v\n%s", err, buf)
			}
			want := "karmadactl register: half-done in namespace " + c.ns + " (" + c.why + "); removing it and registering again"
			if !strings.Contains(buf.String(), want) {
				t.Errorf("printed:\n%s\nwant %q", buf, want)
			}
			if got := strings.Join(subcommands(t, record), " "); got != "version register" {
				t.Errorf("karmadactl calls = %q, want version register", got)
			}
			if _, err := client.CoreV1().Secrets(c.ns).Get(t.Context(), agentKubeconfigSecret, metav1.GetOptions{}); err == nil {
				t.Errorf("the secret %s survived", agentKubeconfigSecret)
			}
			if _, err := client.CoreV1().ServiceAccounts(c.ns).Get(t.Context(), agentServiceAccount, metav1.GetOptions{}); err == nil {
				t.Errorf("the serviceaccount %s survived", agentServiceAccount)
			}
		})
	}
}

// Register with agent_api_endpoint on a member that already runs karmada-agent:
// the agent's kubeconfig gets the server, the agent is restarted through its pod
// template, a second run changes nothing, and the client key is never printed.
func (s servers) testRegisterAgentEndpoint(t *testing.T) {
	const ns = "kreg-agent"
	s.createAgent(t, ns, "https://10.96.0.10:5443")
	bin, record := fakeKarmadactl(t, "v1.13.0", map[string]string{"register": "exit 1"})
	reg := &Registration{Karmadactl: bin, APIEndpoint: "10.96.0.10:5443", Token: goodToken, CACertHash: "sha256:00",
		ClusterName: "member4", Kubeconfig: s.member.Kubeconfig, Namespace: ns, AgentAPIEndpoint: "127.0.0.1:15443",
		ClusterAPIEndpoint: "https://10.0.3.14:16443", AgentArgs: []string{"--feature-gates=MultiClusterService=true"}}
	if err := reg.Validate(); err != nil {
		t.Fatal(err)
	}
	const want = "https://127.0.0.1:15443"
	client := s.member.Clientset(t)
	versions := func() (string, string) {
		secret, err := client.CoreV1().Secrets(ns).Get(t.Context(), agentKubeconfigSecret, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		agent, err := client.AppsV1().Deployments(ns).Get(t.Context(), agentDeployment, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		kc, err := clientcmd.Load(secret.Data[agentKubeconfigSecret])
		if err != nil {
			t.Fatal(err)
		}
		if got := kc.Clusters["karmada-apiserver"].Server; got != want {
			t.Errorf("agent kubeconfig server = %q, want %q", got, want)
		}
		if got := string(kc.AuthInfos["karmada-agent"].ClientKeyData); got != testKey {
			t.Errorf("agent kubeconfig lost its client key")
		}
		if got := agent.Spec.Template.Annotations[agentServerAnnotation]; got != want {
			t.Errorf("karmada-agent pod template annotation %s = %q, want %q", agentServerAnnotation, got, want)
		}
		if got := agent.Spec.Template.Spec.Containers[0].Command; !slices.Contains(got, "--cluster-api-endpoint=https://10.0.3.14:16443") ||
			slices.Contains(got, "--cluster-api-endpoint=https://127.0.0.1:16444") || !slices.Contains(got, "--feature-gates=MultiClusterService=true") {
			t.Errorf("karmada-agent command = %q, want --cluster-api-endpoint=https://10.0.3.14:16443 in place of the one register wrote, and the feature gate", got)
		}
		return secret.ResourceVersion, agent.ResourceVersion
	}
	noKey := func(t *testing.T, log string) {
		t.Helper()
		for _, secret := range []string{"FLOWTESTKEYMATERIAL", base64.StdEncoding.EncodeToString([]byte(testKey))[:20]} {
			if strings.Contains(log, secret) {
				t.Errorf("printed the client key:\n%s", log)
			}
		}
	}

	env, buf := taskstest.NewEnv(t)
	if _, err := reg.Run(t.Context(), env); err != nil {
		t.Fatalf("%v\n%s", err, buf)
	}
	for _, line := range []string{"karmada-agent in namespace kreg-agent already present (cluster member4)", "karmada-agent: karmada API server → " + want,
		"karmada-agent: arguments --feature-gates=MultiClusterService=true --cluster-api-endpoint=https://10.0.3.14:16443 set"} {
		if !strings.Contains(buf.String(), line) {
			t.Errorf("printed:\n%s\nwant %q", buf, line)
		}
	}
	noKey(t, buf.String())
	secretRV, agentRV := versions()

	env, buf = taskstest.NewEnv(t)
	if _, err := reg.Run(t.Context(), env); err != nil {
		t.Fatalf("%v\n%s", err, buf)
	}
	if strings.Contains(buf.String(), "karmada API server →") || strings.Contains(buf.String(), "arguments") {
		t.Errorf("second run printed:\n%s", buf)
	}
	noKey(t, buf.String())
	if s2, a2 := versions(); s2 != secretRV || a2 != agentRV {
		t.Errorf("second run changed the secret (%s → %s) or the deployment (%s → %s)", secretRV, s2, agentRV, a2)
	}
	if got := strings.Join(subcommands(t, record), " "); got != "version version" {
		t.Errorf("karmadactl calls = %q, want version version", got)
	}
}

// Destroy runs karmadactl unregister, with the Karmada kubeconfig and without the
// token, when the member runs karmada-agent or Karmada has the Cluster; with neither,
// it says already unregistered and runs nothing.
func (s servers) testRegisterDestroy(t *testing.T) {
	cases := []struct {
		name, ns, cluster string
		agent, object     bool
		want              string
	}{
		{"agent", "kreg-destroy-agent", "member6", true, false, "version unregister"},
		{"cluster object only", "kreg-destroy-object", "member7", false, true, "version unregister"},
		{"nothing", "kreg-destroy-none", "member8", false, false, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.agent {
				s.createAgent(t, c.ns, "https://10.1.0.1:32443")
			}
			if c.object {
				obj := &unstructured.Unstructured{Object: map[string]any{
					"apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster",
					"metadata": map[string]any{"name": c.cluster},
					"spec":     map[string]any{"syncMode": "Pull"},
				}}
				if _, err := s.karmada.Dynamic(t).Resource(clusters).Create(t.Context(), obj, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			bin, record := fakeKarmadactl(t, "v1.13.0", map[string]string{"unregister": "echo unregistered"})
			env, buf := taskstest.NewEnv(t)
			// As flow destroy decodes it: the token and endpoint were never stored.
			reg := &Registration{Karmadactl: bin, ClusterName: c.cluster, Kubeconfig: s.member.Kubeconfig,
				Namespace: c.ns, KarmadaKubeconfig: s.karmada.Kubeconfig}
			if err := reg.Destroy(t.Context(), env, nil); err != nil {
				t.Fatalf("%v\n%s", err, buf)
			}
			if got := strings.Join(subcommands(t, record), " "); got != c.want {
				t.Errorf("karmadactl calls = %q, want %q\n%s", got, c.want, buf)
			}
			if c.want == "" {
				if !strings.Contains(buf.String(), "cluster "+c.cluster+" already unregistered") {
					t.Errorf("printed:\n%s", buf)
				}
				return
			}
			argv := calls(t, record)[1]
			for _, flag := range []string{"unregister " + c.cluster, "--cluster-kubeconfig=" + s.member.Kubeconfig,
				"--namespace=" + c.ns, "--karmada-config=" + s.karmada.Kubeconfig} {
				if !strings.Contains(argv, flag) {
					t.Errorf("karmadactl %s lacks %s", argv, flag)
				}
			}
		})
	}
}

// A karmadactl register that cannot reach the API server ("Unable to connect to the
// server: EOF", seen from Karmada's just after karmadactl init) runs again, and says
// so; any other failure does not.
func (s servers) testRegisterRetriesUnreachable(t *testing.T) {
	for _, c := range []struct {
		name, firstFailure string
		want               int // karmadactl register runs
	}{
		{"unreachable", "Unable to connect to the server: EOF", 2},
		{"other failure", "error: token is not valid", 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			script := `if [ -e "$0.tried" ]; then echo registered; else : >"$0.tried"; echo "` + c.firstFailure + `" >&2; exit 1; fi`
			bin, record := fakeKarmadactl(t, "v1.13.0", map[string]string{"register": script})
			env, buf := taskstest.NewEnv(t)
			reg := &Registration{Karmadactl: bin, APIEndpoint: "127.0.0.1:5443", Token: goodToken, CACertHash: "sha256:00",
				ClusterName: "member6", Kubeconfig: s.member.Kubeconfig, Namespace: "kreg-retry-" + strings.ReplaceAll(c.name, " ", "-")}
			_, err := reg.Run(t.Context(), env)
			runs := 0
			for _, sub := range subcommands(t, record) {
				if sub == "register" {
					runs++
				}
			}
			if runs != c.want {
				t.Errorf("karmadactl register ran %d times, want %d\n%s", runs, c.want, buf)
			}
			if c.want == 2 {
				if err != nil {
					t.Fatalf("%v\n%s", err, buf)
				}
				if !strings.Contains(buf.String(), "transient fault: karmadactl could not reach the API server; retry 1") {
					t.Errorf("the retry was not reported:\n%s", buf)
				}
			} else if err == nil {
				t.Errorf("Run succeeded after %q", c.firstFailure)
			}
		})
	}
}
