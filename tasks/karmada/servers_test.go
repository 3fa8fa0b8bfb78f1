package karmada

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flowdev/flow/tasks/kube/kubetest"
	"github.com/flowdev/flow/tasks/taskstest"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

// servers are the real API servers the tests share: karmada, a kube-apiserver
// with Karmada's CRDs and the Cluster CRD of the local lab, and member, with the
// service-account token controllers karmadactl join needs. member is also the
// host cluster of the init tests and the member of the register tests; each test
// uses names of its own.
type servers struct {
	karmada, member *kubetest.Server
	karmadactl      string
}

func TestWithAPIServers(t *testing.T) {
	s := servers{karmadactl: kubetest.Binary(t, "karmadactl")}
	s.karmada = kubetest.Start(t, kubetest.Options{})
	s.member = kubetest.Start(t, kubetest.Options{ControllerManager: true})
	applyCRDs(t, s.karmada,
		filepath.Join(kubetest.BinDir(), "karmada-crds-"+kubetest.KarmadaVersion),
		filepath.Join("..", "..", "flows", "karmada-local-lab", "cluster-crd.yaml"))

	t.Run("join", s.testJoin)
	t.Run("join raced by an earlier attempt FakeKarmadactl", s.testJoinRaced)
	t.Run("join stale unjoin fails FakeKarmadactl", s.testJoinStaleUnjoinFails)
	t.Run("token", s.testToken)
	t.Run("init already present", s.testInitPresent)
	t.Run("init deinit first FakeKarmadactl", s.testInitDeinit)
	t.Run("init whole control plane FakeKarmadactl", s.testInitPlane)
	t.Run("init destroy FakeKarmadactl", s.testInitDestroy)
	t.Run("register already present FakeKarmadactl", s.testRegisterPresent)
	t.Run("register half-done FakeKarmadactl", s.testRegisterHalfDone)
	t.Run("register retries unreachable FakeKarmadactl", s.testRegisterRetriesUnreachable)
	t.Run("register hides token FakeKarmadactl", s.testRegisterHidesToken)
	t.Run("register agent api endpoint FakeKarmadactl", s.testRegisterAgentEndpoint)
	t.Run("register destroy FakeKarmadactl", s.testRegisterDestroy)
	t.Run("addon enable adopt destroy NoKubelet", s.testAddon)
}

// Join for real with api_endpoint: the Cluster object appears with the member's
// identity and api_endpoint; a second run says already present and runs no
// karmadactl join; a changed spec.apiEndpoint is patched back without a join; a
// Cluster whose spec.id is not the member's is stale and joined again.
func (s servers) testJoin(t *testing.T) {
	bin, record := recordingKarmadactl(t, s.karmadactl)
	endpoint := strings.Replace(s.member.URL, "127.0.0.1", "localhost", 1)
	join := &Join{
		Karmadactl: bin, Cluster: "member1", Kubeconfig: s.karmada.Kubeconfig, Context: "kubetest",
		ClusterKubeconfig: s.member.Kubeconfig, ClusterRegion: "lab", ClusterZones: []string{"lab-a", "lab-b"},
		APIEndpoint: endpoint,
	}
	if err := join.Validate(); err != nil {
		t.Fatal(err)
	}
	kubeSystem, err := s.member.Clientset(t).CoreV1().Namespaces().Get(t.Context(), "kube-system", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	memberID := string(kubeSystem.UID)
	clusterClient := s.karmada.Dynamic(t).Resource(clusters)
	run := func(t *testing.T, wantCalls string, printed ...string) {
		t.Helper()
		if err := os.Remove(record); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		env, buf := taskstest.NewEnv(t)
		ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
		defer cancel()
		out, err := join.Run(ctx, env)
		if err != nil {
			t.Fatalf("%v\n%s", err, buf)
		}
		if out["cluster"].AsString() != "member1" {
			t.Errorf("outputs = %v", out)
		}
		for _, p := range printed {
			if !strings.Contains(buf.String(), p) {
				t.Errorf("printed:\n%s\nwant %q", buf, p)
			}
		}
		if got := strings.Join(subcommands(t, record), " "); got != wantCalls {
			t.Errorf("karmadactl calls = %q, want %q\n%s", got, wantCalls, buf)
		}
		cluster, err := clusterClient.Get(t.Context(), "member1", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("cluster member1: %v\n%s", err, buf)
		}
		gotEndpoint, _, _ := unstructured.NestedString(cluster.Object, "spec", "apiEndpoint")
		id, _, _ := unstructured.NestedString(cluster.Object, "spec", "id")
		region, _, _ := unstructured.NestedString(cluster.Object, "spec", "region")
		zones, _, _ := unstructured.NestedStringSlice(cluster.Object, "spec", "zones")
		if gotEndpoint != endpoint || id != memberID || region != "lab" || !slices.Equal(zones, []string{"lab-a", "lab-b"}) {
			t.Errorf("cluster spec: apiEndpoint %q id %q region %q zones %q; want %q %q lab [lab-a lab-b]", gotEndpoint, id, region, zones, endpoint, memberID)
		}
	}
	patch := func(t *testing.T, spec string) {
		t.Helper()
		if _, err := clusterClient.Patch(t.Context(), "member1", types.MergePatchType, []byte(`{"spec":`+spec+`}`), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("join", func(t *testing.T) {
		run(t, "version join", "cluster(member1) is joined successfully", "cluster member1: api endpoint "+s.member.URL+" → "+endpoint)
	})
	t.Run("again", func(t *testing.T) {
		run(t, "version", "cluster member1 already present (api endpoint "+endpoint+")")
	})
	t.Run("endpoint changed", func(t *testing.T) {
		patch(t, `{"apiEndpoint":"https://10.0.0.1:6443"}`)
		run(t, "version", "cluster member1: api endpoint https://10.0.0.1:6443 → "+endpoint)
	})
	t.Run("stale", func(t *testing.T) {
		patch(t, `{"id":"bogus"}`)
		run(t, "version unjoin join", "cluster member1 is stale (id bogus, the member's is now "+memberID+"); unjoining and joining again",
			"cluster(member1) is joined successfully")
	})
}

// A join left running by a killed run creates the Cluster while the re-run's own
// join is under way; karmadactl then refuses ("already exist"), and the task
// succeeds because the member is joined.
func (s servers) testJoinRaced(t *testing.T) {
	kubeSystem, err := s.member.Clientset(t).CoreV1().Namespaces().Get(t.Context(), "kube-system", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	bin, _ := fakeKarmadactl(t, kubetest.KarmadaVersion, map[string]string{
		"join": "sleep 1; echo 'error: failed to create cluster(member-raced) object. error: cluster(member-raced) already exist' >&2; exit 1",
	})
	go func() {
		time.Sleep(200 * time.Millisecond)
		c := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster",
			"metadata": map[string]any{"name": "member-raced"},
			"spec":     map[string]any{"apiEndpoint": s.member.URL, "syncMode": "Push", "id": string(kubeSystem.UID)},
		}}
		_, _ = s.karmada.Dynamic(t).Resource(clusters).Create(context.Background(), c, metav1.CreateOptions{})
	}()
	env, buf := taskstest.NewEnv(t)
	join := &Join{Karmadactl: bin, Cluster: "member-raced", Kubeconfig: s.karmada.Kubeconfig, ClusterKubeconfig: s.member.Kubeconfig}
	if _, err := join.Run(t.Context(), env); err != nil {
		t.Fatalf("Run() = %v\n%s", err, buf)
	}
	if !strings.Contains(buf.String(), "cluster member-raced was joined by an earlier attempt") {
		t.Errorf("output:\n%s", buf)
	}
}

var tokenShape = regexp.MustCompile(`^[a-z0-9]{6}\.[a-z0-9]{16}$`)

// Token for real against the Karmada API server: the outputs match the server and
// its CA, the token exists as a bootstrap secret, and nothing of it is printed.
func (s servers) testToken(t *testing.T) {
	env, buf := taskstest.NewEnv(t)
	out, err := (&Token{Karmadactl: s.karmadactl, Kubeconfig: s.karmada.Kubeconfig, TTL: "10m", Description: "flow test"}).Run(t.Context(), env)
	if err != nil {
		t.Fatalf("%v\n%s", err, buf)
	}
	token := out["token"].AsString()
	if !tokenShape.MatchString(token) {
		t.Fatalf("token output is not a bootstrap token")
	}
	if got, want := out["api_endpoint"].AsString(), strings.TrimPrefix(s.karmada.URL, "https://"); got != want {
		t.Errorf("api_endpoint = %q, want %q", got, want)
	}
	// kube-apiserver's self-signed CA file holds two certificates; karmadactl pins each.
	if got, want := out["ca_cert_hash"].AsString(), caHash(t, s.karmada.CAFile); !slices.Contains(strings.Split(got, ","), want) {
		t.Errorf("ca_cert_hash = %q, want it to pin %q", got, want)
	}
	if cmd := out["register_command"].AsString(); !strings.Contains(cmd, " register "+out["api_endpoint"].AsString()+" --token "+token) {
		t.Errorf("register_command lacks endpoint and token")
	}
	id, _, _ := strings.Cut(token, ".")
	secret, err := s.karmada.Clientset(t).CoreV1().Secrets("kube-system").Get(t.Context(), "bootstrap-token-"+id, metav1.GetOptions{})
	if err != nil || string(secret.Data["description"]) != "flow test" {
		t.Errorf("bootstrap token secret: %v", err)
	}
	if strings.Contains(buf.String(), id) {
		t.Errorf("printed the token:\n%s", buf)
	}
}

// caHash is the discovery hash of a CA certificate: sha256 of its public key info.
func caHash(t *testing.T, caFile string) string {
	t.Helper()
	b, err := os.ReadFile(caFile)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(b)
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(cert.RawSubjectPublicKeyInfo)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Init over remains: deinit runs first exactly when the host has the namespace
// and the control plane is not complete, unless deinit_first is false. The
// fake karmadactl records argv; the flags are checked against the real help in
// TestFlagTablesInPinnedHelp.
func (s servers) testInitDeinit(t *testing.T) {
	hostKC := s.member.Kubeconfig
	no := false
	cases := []struct {
		name        string
		namespace   string
		create      bool   // create the namespace on the host first
		attempt     int    //
		staleConfig bool   // karmada_data holds a kubeconfig of a server that is gone
		deinitFirst *bool  //
		deinitFails bool   //
		want        string // subcommands run, in order
		printed     string
		deinit      string // the fake deinit's shell lines; "" succeeds, or fails when deinitFails
	}{
		{"fresh host", "kinit-fresh", false, 1, false, nil, false, "version init", "installing", ""},
		{"namespace left over", "kinit-left", true, 1, false, nil, false, "version deinit init", "karmadactl init: half-done (no kubeconfig ", ""},
		{"retry", "kinit-retry", true, 2, true, nil, false, "version deinit init", "karmadactl init: half-done (karmada API server https://127.0.0.1:1 not ready: ", ""},
		{"retry without namespace", "kinit-retry-none", false, 3, false, nil, false, "version init", "attempt 3, but the host has no namespace kinit-retry-none; nothing to remove", ""},
		{"deinit_first false", "kinit-keep", true, 2, false, &no, false, "version init", "deinit_first is false, so installing over it", ""},
		{"deinit fails", "kinit-fail", true, 1, false, nil, true, "version deinit", "", ""},
		// deinit updates the Node's labels, which the kubelet keeps updating too.
		{"deinit loses a race on the node", "kinit-race", true, 1, false, nil, false, "version deinit deinit init",
			"karmadactl deinit lost a race on an object (Conflict); running it again (2 of 3)", `if [ -e "$0.raced" ]; then echo deinit done; else : >"$0.raced"
echo 'Error from server (Conflict): Operation cannot be fulfilled on nodes "karmada-host": the object has been modified; please apply your changes to the latest version and try again' >&2; exit 1; fi`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.create {
				ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: c.namespace}}
				if _, err := s.member.Clientset(t).CoreV1().Namespaces().Create(t.Context(), ns, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			deinit := "echo deinit done"
			if c.deinit != "" {
				deinit = c.deinit
			}
			if c.deinitFails {
				deinit = "echo 'error: boom' >&2; exit 1"
			}
			bin, record := fakeKarmadactl(t, "v1.13.0", map[string]string{
				"deinit": deinit,
				"init": `for a in "$@"; do case $a in --karmada-data=*) d=${a#--karmada-data=};; esac; done
mkdir -p "$d" && : >"$d/karmada-apiserver.config" && echo 'Karmada is installed successfully.'`,
			})
			data := filepath.Join(t.TempDir(), "karmada")
			if c.staleConfig {
				if err := os.MkdirAll(data, 0o755); err != nil {
					t.Fatal(err)
				}
				stale := strings.ReplaceAll(mustRead(t, hostKC), s.member.URL, "https://127.0.0.1:1")
				if err := os.WriteFile(filepath.Join(data, "karmada-apiserver.config"), []byte(stale), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			env, buf := taskstest.NewEnv(t)
			env.Attempt = c.attempt
			etcd := etcdData(t)
			init := &Init{Karmadactl: bin, Kubeconfig: hostKC, Context: "kubetest", Namespace: c.namespace, KarmadaData: data, DeinitFirst: c.deinitFirst, EtcdData: etcd}
			_, err := init.Run(t.Context(), env)
			if c.deinitFails {
				if err == nil || !strings.Contains(err.Error(), `karmadactl deinit in namespace "kinit-fail" before init`) {
					t.Errorf("err = %v, want the deinit failure", err)
				}
			} else if err != nil {
				t.Fatalf("%v\n%s", err, buf)
			}
			if got := strings.Join(subcommands(t, record), " "); got != c.want {
				t.Errorf("karmadactl calls = %q, want %q\n%s", got, c.want, buf)
			}
			if !strings.Contains(buf.String(), c.printed) {
				t.Errorf("printed:\n%s\nwant %q", buf, c.printed)
			}
			removed := strings.Contains(c.want, "deinit") && !c.deinitFails
			if _, err := os.Stat(filepath.Join(etcd, "member")); os.IsNotExist(err) != removed {
				t.Errorf("etcd's member directory: %v, want removed %v", err, removed)
			}
			all := calls(t, record)
			for _, call := range all {
				if strings.HasPrefix(call, "deinit") {
					want := "deinit --force --kubeconfig=" + hostKC + " --context=kubetest --namespace=" + c.namespace
					if call != want {
						t.Errorf("deinit call = %q, want %q", call, want)
					}
				}
				if strings.HasPrefix(call, "init") {
					want := "init --kubeconfig=" + hostKC + " --context=kubetest --namespace=" + c.namespace + " --karmada-data=" + data + " --etcd-data=" + etcd
					if call != want {
						t.Errorf("init call = %q, want %q", call, want)
					}
				}
			}
		})
	}
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Register on a member that already runs karmada-agent: already present, no
// karmadactl register.
func (s servers) testRegisterPresent(t *testing.T) {
	const ns = "kreg-present"
	client := s.member.Clientset(t)
	if _, err := client.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{"app": "karmada-agent"}
	agent := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "karmada-agent", Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "karmada-agent", Image: "docker.io/karmada/karmada-agent:v1.13.0"}}},
			},
		},
	}
	created, err := client.AppsV1().Deployments(ns).Create(t.Context(), agent, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	setAvailable(t, s, created, 1)
	bin, record := fakeKarmadactl(t, "v1.13.0", map[string]string{"register": "exit 1"})
	env, buf := taskstest.NewEnv(t)
	reg := &Registration{Karmadactl: bin, APIEndpoint: "127.0.0.1:5443", Token: goodToken, CACertHash: "sha256:00",
		ClusterName: "member2", Kubeconfig: s.member.Kubeconfig, Namespace: ns}
	out, err := reg.Run(t.Context(), env)
	if err != nil {
		t.Fatal(err)
	}
	if out["cluster"].AsString() != "member2" || !strings.Contains(buf.String(), "karmada-agent in namespace kreg-present already present (cluster member2)") {
		t.Errorf("outputs %v, printed:\n%s", out, buf)
	}
	if got := subcommands(t, record); strings.Join(got, " ") != "version" {
		t.Errorf("karmadactl calls = %q, want only version", got)
	}
}

// Register without an agent runs karmadactl register with the token, and neither
// the printed command line nor karmadactl's output shows it.
func (s servers) testRegisterHidesToken(t *testing.T) {
	bin, record := fakeKarmadactl(t, "v1.13.0", map[string]string{
		"register": `echo "registering with $*"; printf 'partial %s' "$3" >&2; echo ' line' >&2; exit 3`,
	})
	env, buf := taskstest.NewEnv(t)
	reg := &Registration{Karmadactl: bin, APIEndpoint: "127.0.0.1:5443", Token: goodToken, CACertHash: "sha256:00",
		ClusterName: "member3", Kubeconfig: s.member.Kubeconfig, Namespace: "kreg-absent"}
	_, err := reg.Run(t.Context(), env)
	if err == nil || !strings.Contains(err.Error(), `karmadactl register "member3"`) || strings.Contains(err.Error(), goodToken) {
		t.Errorf("err = %v, want the register failure without the token", err)
	}
	want := "register 127.0.0.1:5443 --token=" + goodToken + " --discovery-token-ca-cert-hash=sha256:00 --cluster-name=member3 --kubeconfig=" + s.member.Kubeconfig + " --namespace=kreg-absent"
	if got := calls(t, record); len(got) != 2 || got[1] != want {
		t.Errorf("karmadactl calls = %q, want version and %q", got, want)
	}
	log := buf.String()
	if strings.Contains(log, goodToken) || strings.Contains(log, "0123456789abcdef") {
		t.Errorf("printed the token:\n%s", log)
	}
	for _, line := range []string{
		"karmadactl register 127.0.0.1:5443 --token=(sensitive) --discovery-token-ca-cert-hash=sha256:00",
		"registering with register 127.0.0.1:5443 --token=(sensitive)",
		"partial --token=(sensitive) line", // the token split across two writes
	} {
		if !strings.Contains(log, line) {
			t.Errorf("printed:\n%s\nwant a line with %q", log, line)
		}
	}
}
