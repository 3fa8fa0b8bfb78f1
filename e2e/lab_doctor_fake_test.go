package e2e

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// closedPort is a loopback port nothing listens on (it was free a moment ago).
func closedPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	return port
}

// TestLabDoctorWithoutTheLab_FakesTheLab runs flows/lab-doctor.hcl against a lab that is
// not there (the k8s lab is too heavy for every test run; checkDoctor runs the doctor
// on the real one): clusters no LXD instance is named after, API ports nothing listens
// on, a config_dir with no kubeconfig. Every finding must name its fix, none a resume
// (which has nothing to do after a run that succeeded), and the doctor must exit 1.
func TestLabDoctorWithoutTheLab_FakesTheLab(t *testing.T) {
	tag, dir := newTag(t), t.TempDir()
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	member, host := fmt.Sprintf("doctor-m-%d", os.Getpid()), fmt.Sprintf("doctor-h-%d", os.Getpid())
	r := runFlow(t, tag, root, 2*time.Minute, "run", filepath.Join(root, "flows", "lab-doctor.hcl"), "--new",
		"--state", filepath.Join(dir, "doctor.db"), "--progress", "plain",
		"--var", fmt.Sprintf("members={%q=%d}", member, closedPort(t)),
		"--var", "host_cluster="+host, "--var", fmt.Sprintf("host_port=%d", closedPort(t)),
		"--var", fmt.Sprintf("pull_members=[%q]", member), "--var", "config_dir="+filepath.Join(dir, "cfg"))
	if r.code != 1 {
		t.Fatalf("the doctor exited %d on a missing lab, want 1\n%s", r.code, r.desc)
	}
	fixes := doctorFixes(r.stdout)
	for prefix, fix := range map[string]string{
		member + ": container missing":                  "make demo",
		host + ": container missing":                    "make demo",
		"karmada: Karmada's API server does not answer": "make demo",
		member + ": karmada-agent Deployment missing":   "make demo",
	} {
		if got, ok := fixFor(fixes, prefix); !ok || got != fix {
			t.Errorf("fix for %q: %q (found: %v), want %q\n%s", prefix, got, ok, fix, r.stdout)
		}
	}
	if len(fixes) != 4 || strings.Contains(r.stdout, "resume of the lab") || strings.Contains(r.stdout, ": ok") {
		t.Errorf("findings %v:\n%s", fixes, r.stdout)
	}
	if !strings.Contains(r.stdout, "4 problem(s) found; each line ends with the command that repairs it:") {
		t.Errorf("the verdict does not list the problems:\n%s", r.stdout)
	}
}

// TestLabDoctorVerdict: the doctor's verdict exits 0 when every finding is ok (empty
// lines aside), else 1, listing only the findings that are not.
func TestLabDoctorVerdict(t *testing.T) {
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	verdict := filepath.Join(root, "flows", "lab-doctor", "verdict.sh")
	for _, tc := range []struct {
		findings []string
		code     int
		out      string
	}{
		{[]string{"member1: ok", "", "karmada: ok"}, 0, "the lab is whole: every check is ok\n"},
		{[]string{"member1: ok", "member2: kubelet is not running (fix: up)", "karmada: ok"}, 1,
			"1 problem(s) found; each line ends with the command that repairs it:\n  member2: kubelet is not running (fix: up)\n"},
	} {
		out, err := exec.Command("bash", append([]string{verdict}, tc.findings...)...).Output()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if code != tc.code || string(out) != tc.out {
			t.Errorf("verdict %q: exit %d, %q; want %d, %q", tc.findings, code, out, tc.code, tc.out)
		}
	}
}
