package wait

import (
	"context"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/flowdev/flow/tasks"
	"github.com/flowdev/flow/tasks/kube/kubetest"
)

// TestKube runs the tests of every Kubernetes kind against one real kube-apiserver:
// starting one takes seconds. Each subtest uses names of its own; only nodes, which
// are cluster-scoped, are left to the nodes subtest alone.
func TestKube(t *testing.T) {
	s := kubetest.Start(t, kubetest.Options{})
	for _, tt := range []struct {
		name string
		test func(*testing.T, *kubetest.Server)
	}{
		{"kube_api", testKubeAPI},
		{"nodes", testNodes},
		{"deployment", testDeployment},
		{"pods", testPods},
		{"pods/why", testPodsWhy},
		{"karmada_clusters", testKarmadaClusters},
		{"karmada_placement", testKarmadaPlacement},
		{"condition", testCondition},
	} {
		t.Run(tt.name, func(t *testing.T) { tt.test(t, s) })
	}
}

// shortWait is the wait_timeout of waits that must time out: long enough for a
// first check (discovery, for kind condition) on a busy machine.
const shortWait = "1s"

// kubeWait connects w to s and checks often; a wait_timeout left empty is 10s.
func kubeWait(s *kubetest.Server, w WaitReady) *WaitReady {
	w.Kubeconfig = s.Kubeconfig
	w.Interval = "50ms"
	if w.WaitTimeout == "" {
		w.WaitTimeout = "10s"
	}
	return &w
}

// wantTimeout runs w, which must time out with last as the last observed state.
func wantTimeout(t *testing.T, w *WaitReady, last string) {
	t.Helper()
	out, _, err := run(context.Background(), t, w)
	want := fmt.Sprintf("wait for %s: not ready after %s: last %s", kinds[w.Kind].what(w), w.WaitTimeout, last)
	if err == nil || err.Error() != want {
		t.Fatalf("Run error = %v\nwant %q", err, want)
	}
	if out != nil {
		t.Errorf("outputs = %v, want nil", out)
	}
}

// runChanging runs w while change, after a moment, makes the thing ready. The wait
// must notice, and must have reported the state before the change, notReady.
func runChanging(t *testing.T, w *WaitReady, notReady string, change func() error) tasks.Outputs {
	t.Helper()
	setProgressEvery(t, 100*time.Millisecond)
	const delay = 400 * time.Millisecond
	done := make(chan struct{})
	go func() {
		defer close(done)
		time.Sleep(delay)
		if err := change(); err != nil {
			t.Errorf("change: %v", err)
		}
	}()
	out, stdout, err := run(context.Background(), t, w)
	<-done
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, stdout)
	}
	if e := outNumber(t, out, "elapsed"); e < delay.Seconds() {
		t.Errorf("elapsed = %v s, want it ready only after the change at %v", e, delay)
	}
	if !strings.Contains(stdout, "last: "+notReady+")") {
		t.Errorf("progress never reported %q:\n%s", notReady, stdout)
	}
	if !strings.Contains(stdout, kinds[w.Kind].what(w)+" ready after ") {
		t.Errorf("stdout lacks the ready line:\n%s", stdout)
	}
	return out
}

func check(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// createNamespace creates ns with the default ServiceAccount that pods need; no
// controller creates it here.
func createNamespace(t *testing.T, s *kubetest.Server, ns string) {
	t.Helper()
	c := s.Clientset(t)
	_, err := c.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	check(t, err)
	_, err = c.CoreV1().ServiceAccounts(ns).Create(t.Context(), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{})
	check(t, err)
}

// writeKubeconfig writes s's admin kubeconfig with server instead of s.URL.
func writeKubeconfig(t *testing.T, s *kubetest.Server, server string) string {
	t.Helper()
	cfg := s.KubeconfigAPI("other")
	cfg.Clusters["other"].Server = server
	path := filepath.Join(t.TempDir(), "other.kubeconfig")
	check(t, clientcmd.WriteToFile(*cfg, path))
	return path
}

func testKubeAPI(t *testing.T, s *kubetest.Server) {
	t.Run("ready", func(t *testing.T) {
		for _, kubeContext := range []string{"", "kubetest"} {
			w := kubeWait(s, WaitReady{Kind: "kube_api", Context: kubeContext})
			out, stdout, err := run(context.Background(), t, w)
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if e := outNumber(t, out, "elapsed"); e > 2 {
				t.Errorf("elapsed = %v s, want under 2", e)
			}
			if want := "Kubernetes API in " + s.Kubeconfig + " ready after "; kubeContext == "" && !strings.Contains(stdout, want) {
				t.Errorf("stdout lacks %q:\n%s", want, stdout)
			}
			if want := "Kubernetes API in context kubetest of " + s.Kubeconfig + " ready after "; kubeContext != "" && !strings.Contains(stdout, want) {
				t.Errorf("stdout lacks %q:\n%s", want, stdout)
			}
			if strings.Contains(stdout, s.Token) {
				t.Errorf("stdout shows the token:\n%s", stdout)
			}
		}
	})

	t.Run("connection refused", func(t *testing.T) {
		w := kubeWait(s, WaitReady{Kind: "kube_api", WaitTimeout: shortWait})
		w.Kubeconfig = writeKubeconfig(t, s, "https://"+freeAddr(t))
		wantTimeout(t, w, "error: connect: connection refused")
	})

	// No real API server can be made to answer 503 on demand, so plain HTTP servers
	// stand in for one that is starting.
	t.Run("starting", func(t *testing.T) {
		// fake answers over TLS, which client-go needs before it sends the token,
		// and checks the token.
		fake := func(ready http.HandlerFunc) string {
			srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != "/readyz" || r.Header.Get("Authorization") != "Bearer "+s.Token {
					http.Error(w, "unexpected request", http.StatusBadRequest)
					return
				}
				ready(w, r)
			}))
			t.Cleanup(srv.Close)
			cfg := s.KubeconfigAPI("fake")
			cfg.Clusters["fake"].Server = srv.URL
			cfg.Clusters["fake"].CertificateAuthorityData = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
			path := filepath.Join(t.TempDir(), "fake.kubeconfig")
			check(t, clientcmd.WriteToFile(*cfg, path))
			return path
		}
		w := kubeWait(s, WaitReady{Kind: "kube_api", WaitTimeout: shortWait})
		w.Kubeconfig = fake(reply(503, "[-]etcd failed"))
		wantTimeout(t, w, "status 503")

		w.Kubeconfig = fake(reply(200, "not yet"))
		wantTimeout(t, w, `status 200, body "not yet"`)

		w.Kubeconfig, w.WaitTimeout = fake(notReadyFor(3, reply(200, "ok"))), "10s"
		if _, _, err := run(context.Background(), t, w); err != nil {
			t.Fatalf("Run: %v", err)
		}
	})

	t.Run("kubeconfig errors end the wait", func(t *testing.T) {
		missing := filepath.Join(t.TempDir(), "missing.kubeconfig")
		broken := filepath.Join(t.TempDir(), "broken.kubeconfig")
		check(t, os.WriteFile(broken, []byte("clusters: {not a list}\n"), 0o600))
		tests := []struct {
			name    string
			wait    WaitReady
			wantErr string
		}{
			{"missing file", WaitReady{Kubeconfig: missing}, "load " + missing + ": stat " + missing + ": no such file or directory"},
			{"unknown context", WaitReady{Kubeconfig: s.Kubeconfig, Context: "nope"}, `load ` + s.Kubeconfig + ` (context "nope"): context "nope" does not exist`},
			{"not a kubeconfig", WaitReady{Kubeconfig: broken}, "load " + broken + ": "},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				w := tt.wait
				w.Kind, w.WaitTimeout = "kube_api", "1m"
				start := time.Now()
				_, _, err := run(context.Background(), t, &w)
				if took := time.Since(start); took > time.Second {
					t.Errorf("Run took %v, want it to end at once", took)
				}
				want := "wait for " + kinds["kube_api"].what(&w) + ": " + tt.wantErr
				if err == nil || !strings.HasPrefix(err.Error(), want) {
					t.Fatalf("Run error = %v\nwant it to start with %q", err, want)
				}
			})
		}
	})
}
