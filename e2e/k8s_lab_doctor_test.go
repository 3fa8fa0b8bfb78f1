package e2e

import (
	"context"
	"maps"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// checkDoctor breaks three things in the running lab, as the seed's troubleshooting guide
// expects a user to meet them — member2's kubelet stopped, member1's API proxy device
// deleted, karmada-agent in the pull member scaled to 0 — and requires flows/lab-doctor.hcl
// to name each, on the line of its cluster; then it mends them, so the lab is whole again.
func checkDoctor(t *testing.T, tag, root, configDir string) {
	t.Helper()
	ctx := context.Background()
	lxc := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("lxc", args...).CombinedOutput(); err != nil {
			t.Fatalf("lxc %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	agent := clientset(t, filepath.Join(configDir, "member3.config")).AppsV1().Deployments("karmada-system")
	scaleAgent := func(n int32) {
		t.Helper()
		s, err := agent.GetScale(ctx, "karmada-agent", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("karmada-agent's scale: %v", err)
		}
		s.Spec.Replicas = n
		if _, err := agent.UpdateScale(ctx, "karmada-agent", s, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("scale karmada-agent to %d: %v", n, err)
		}
	}

	doctor := func() result {
		t.Helper()
		state := filepath.Join(t.TempDir(), "doctor.db")
		r := runFlow(t, tag, root, 5*time.Minute, "run", filepath.Join(root, "flows", "lab-doctor.hcl"),
			"--var", "config_dir="+configDir, "--state", state, "--progress", "plain")
		if r.code != 0 {
			t.Fatalf("the doctor exited %d\n%s", r.code, r.desc)
		}
		return r
	}
	// A healthy lab first: every cluster ok, so no line below can be a false alarm.
	healthy := doctor()
	for _, c := range append(slices.Sorted(maps.Keys(labMembers)), "karmada-host", "karmada") {
		if !strings.Contains(healthy.stdout, `"`+c+`: ok"`) {
			t.Errorf("the doctor did not find %s ok on the healthy lab:\n%s", c, healthy.stdout)
		}
	}

	lxc("exec", "member2", "--", "sh", "-c", "kill $(cat /run/flow-member/kubelet.pid)")
	lxc("config", "device", "remove", "member1", "api")
	scaleAgent(0)
	// The agent's pod must be gone before the doctor looks: scaling only asks for it.
	if err := poll(ctx, 2*time.Minute, func() (bool, error) {
		d, err := agent.Get(ctx, "karmada-agent", metav1.GetOptions{})
		return err == nil && d.Status.AvailableReplicas == 0, err
	}); err != nil {
		t.Fatalf("karmada-agent still available after scaling to 0: %v", err)
	}

	r := doctor()
	for _, want := range []string{
		"member2: kubelet is not running",
		`member1: proxy device "api" missing`,
		"member3: karmada-agent has 0 of 0 replicas available",
		"member1: nothing listens on 127.0.0.1:16441",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("the doctor did not say %q:\n%s", want, r.stdout)
		}
	}
	if strings.Contains(r.stdout, "member2: ok") || strings.Contains(r.stdout, "member1: ok") {
		t.Errorf("the doctor called a broken member ok:\n%s", r.stdout)
	}

	// Mend: up.sh starts what is not running; the device as the lab made it; the agent back.
	lxc("exec", "member2", "--", "sh", "/opt/flow-member/up.sh")
	lxc("config", "device", "add", "member1", "api", "proxy", "listen=tcp:127.0.0.1:16441", "connect=tcp:127.0.0.1:16443")
	scaleAgent(1)
}
