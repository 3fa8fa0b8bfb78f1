package karmada

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flowdev/flow/tasks/taskstest"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The real karmadactl enables karmada-descheduler (the addon that needs nothing
// but the host cluster) into the member server standing in for the host cluster;
// there is no kubelet, so the test marks every generation of the Deployment rolled
// out. The task adds the forwarding sidecar, adopts the enabled addon without a
// second enable, replaces the sidecar when the forwards change (no enable either),
// and destroy disables it, twice without harm.
func (s servers) testAddon(t *testing.T) {
	const ns = "kaddon"
	host := s.member.Clientset(t)
	if _, err := host.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// karmadactl init writes it; addons enable checks it is there.
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "karmada-descheduler-config", Namespace: ns}}
	if _, err := host.CoreV1().Secrets(ns).Create(t.Context(), secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(t.Context())
	defer stop()
	go keepRolledOut(ctx, host.AppsV1().Deployments(ns), "karmada-descheduler")

	bin, record := recordingKarmadactl(t, s.karmadactl)
	a := &Addon{
		Karmadactl: bin, Addon: "karmada-descheduler", Image: "registry.test/karmada-descheduler:v1.13.0",
		Kubeconfig: s.member.Kubeconfig, Context: "kubetest", KarmadaKubeconfig: s.karmada.Kubeconfig, Namespace: ns,
		LoopbackForwards: map[string]string{"16441": "10.1.0.1:16441"}, ForwarderImage: "registry.test/socat:1.7.4",
	}
	if err := a.Validate(); err != nil {
		t.Fatal(err)
	}
	run := func(t *testing.T, wantCalls string, printed string) *appsv1.Deployment {
		t.Helper()
		if err := os.Remove(record); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		env, buf := taskstest.NewEnv(t)
		runCtx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
		defer cancel()
		out, err := a.Run(runCtx, env)
		if err != nil {
			t.Fatalf("%v\n%s", err, buf)
		}
		if out["deployment"].AsString() != "karmada-descheduler" || out["namespace"].AsString() != ns {
			t.Errorf("outputs = %v", out)
		}
		if !strings.Contains(buf.String(), printed) {
			t.Errorf("printed:\n%s\nwant %q", buf, printed)
		}
		if got := strings.Join(subcommands(t, record), " "); got != wantCalls {
			t.Errorf("karmadactl calls = %q, want %q\n%s", got, wantCalls, buf)
		}
		d, err := host.AppsV1().Deployments(ns).Get(t.Context(), "karmada-descheduler", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	sidecar := func(t *testing.T, d *appsv1.Deployment) string {
		t.Helper()
		c := d.Spec.Template.Spec.Containers
		if len(c) != 2 || c[0].Image != a.Image || c[1].Name != forwarderName || c[1].Image != a.ForwarderImage {
			t.Fatalf("containers %+v", c)
		}
		return strings.Join(c[1].Command, " ")
	}

	t.Run("enable", func(t *testing.T) {
		d := run(t, "version addons", "addon karmada-descheduler enabled (deployment karmada-descheduler rolled out)")
		if cmd := sidecar(t, d); !strings.Contains(cmd, "TCP-LISTEN:16441,bind=127.0.0.1,fork,reuseaddr TCP:10.1.0.1:16441") {
			t.Errorf("sidecar command %q", cmd)
		}
		enable := calls(t, record)[1]
		for _, want := range []string{"addons enable karmada-descheduler", "--karmada-descheduler-image=" + a.Image, "--namespace=" + ns, "--karmada-kubeconfig=" + s.karmada.Kubeconfig} {
			if !strings.Contains(enable, want) {
				t.Errorf("enable %q lacks %q", enable, want)
			}
		}
	})
	t.Run("adopted", func(t *testing.T) {
		run(t, "", "addon karmada-descheduler already enabled")
	})
	t.Run("forwards changed", func(t *testing.T) {
		a.LoopbackForwards = map[string]string{"127.0.0.2:16442": "10.1.0.1:16442"}
		d := run(t, "", "loopback forwards 127.0.0.2:16442 => 10.1.0.1:16442 set")
		if cmd := sidecar(t, d); !strings.Contains(cmd, "TCP-LISTEN:16442,bind=127.0.0.2") || strings.Contains(cmd, "16441") {
			t.Errorf("sidecar command %q", cmd)
		}
	})
	t.Run("destroy", func(t *testing.T) {
		for range 2 {
			env, buf := taskstest.NewEnv(t)
			if err := a.Destroy(t.Context(), env, nil); err != nil {
				t.Fatalf("%v\n%s", err, buf)
			}
			_, err := host.AppsV1().Deployments(ns).Get(t.Context(), "karmada-descheduler", metav1.GetOptions{})
			if !apierrors.IsNotFound(err) {
				t.Fatalf("deployment after destroy: %v\n%s", err, buf)
			}
		}
		if got := calls(t, record); !slices.ContainsFunc(got, func(c string) bool { return strings.HasPrefix(c, "addons disable karmada-descheduler --force") }) {
			t.Errorf("calls %q", got)
		}
	})
}

// keepRolledOut marks every new generation of Deployment name rolled out, as the
// deployment controller and a kubelet would, until ctx ends.
func keepRolledOut(ctx context.Context, deployments interface {
	Get(context.Context, string, metav1.GetOptions) (*appsv1.Deployment, error)
	UpdateStatus(context.Context, *appsv1.Deployment, metav1.UpdateOptions) (*appsv1.Deployment, error)
}, name string) {
	for ctx.Err() == nil {
		d, err := deployments.Get(ctx, name, metav1.GetOptions{})
		if err == nil && d.Generation > d.Status.ObservedGeneration {
			d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1}
			_, _ = deployments.UpdateStatus(ctx, d, metav1.UpdateOptions{})
		}
		time.Sleep(100 * time.Millisecond)
	}
}
