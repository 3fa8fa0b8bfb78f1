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
// to name each, on the line of its cluster, with the command that repairs it, and to exit
// 1 (0 on the whole lab). Then it mends the lab by running exactly those commands, and
// requires the doctor to find it whole again.
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
		if r.code != 0 && r.code != 1 {
			t.Fatalf("the doctor exited %d\n%s", r.code, r.desc)
		}
		return r
	}
	// A healthy lab first: every cluster ok and exit 0, so no line below can be a false alarm.
	healthy := doctor()
	if healthy.code != 0 {
		t.Errorf("the doctor exited %d on the healthy lab\n%s", healthy.code, healthy.desc)
	}
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
	if r.code != 1 {
		t.Errorf("the doctor exited %d on a broken lab, want 1\n%s", r.code, r.desc)
	}
	fixes := doctorFixes(r.stdout)
	for prefix, fix := range map[string]string{
		"member2: kubelet is not running":     "lxc exec member2 -- sh /opt/flow-member/up.sh",
		`member1: proxy device "api" missing`: "lxc config device add member1 api proxy listen=tcp:127.0.0.1:16441 connect=tcp:127.0.0.1:16443",
		"member3: karmada-agent has 0 of 0 replicas available": "kubectl --kubeconfig " + filepath.Join(configDir, "member3.config") +
			" -n karmada-system scale deploy/karmada-agent --replicas=1",
	} {
		if got, ok := fixFor(fixes, prefix); !ok || got != fix {
			t.Errorf("the doctor's fix for %q: %q (found: %v), want %q:\n%s", prefix, got, ok, fix, r.stdout)
		}
	}
	if strings.Contains(r.stdout, "member2: ok") || strings.Contains(r.stdout, "member1: ok") {
		t.Errorf("the doctor called a broken member ok:\n%s", r.stdout)
	}
	// The doctor's own lines (its checks' and its verdict's, prefixed by their address)
	// never prescribe a resume of the lab, which finds nothing to do after a run that
	// succeeded; flow's summary after them names the doctor's own state, not the lab's.
	for _, line := range strings.Split(r.stdout, "\n") {
		if strings.HasPrefix(line, "[exec.") && strings.Contains(line, "resume") {
			t.Errorf("the doctor prescribes a resume: %s", line)
		}
	}

	// Mend with the doctor's own commands for the three causes; what followed from them
	// (member1's Cluster not Ready in Karmada, say) mends itself once they are fixed.
	for _, fix := range slices.Compact(slices.Sorted(maps.Values(fixes))) {
		if fix == "make demo" {
			continue
		}
		cmd := exec.Command("bash", "-c", fix)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("the doctor's fix %q: %v\n%s", fix, err, out)
		}
	}
	var last result
	if err := poll(ctx, 5*time.Minute, func() (bool, error) { last = doctor(); return last.code == 0, nil }); err != nil {
		t.Errorf("after its fixes the doctor still finds problems:\n%s", last.stdout)
	}
}

// doctorFixes maps each finding the doctor's checks printed (the lines of exec.cluster
// and exec.karmada, without their [ADDRESS] prefix, up to " (fix: ") to its fix.
func doctorFixes(stdout string) map[string]string {
	fixes := map[string]string{}
	for _, line := range strings.Split(stdout, "\n") {
		if !strings.HasPrefix(line, "[exec.cluster[") && !strings.HasPrefix(line, "[exec.karmada]") {
			continue
		}
		_, text, _ := strings.Cut(line, "] ")
		if strings.HasPrefix(line, "[exec.cluster[") {
			_, text, _ = strings.Cut(line, "]] ")
		}
		finding, fix, ok := strings.Cut(text, " (fix: ")
		if ok && strings.HasSuffix(fix, ")") {
			fixes[finding] = strings.TrimSuffix(fix, ")")
		}
	}
	return fixes
}

// fixFor is the fix of the finding that starts with prefix.
func fixFor(fixes map[string]string, prefix string) (string, bool) {
	for finding, fix := range fixes {
		if strings.HasPrefix(finding, prefix) {
			return fix, true
		}
	}
	return "", false
}
