package e2e

import (
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/canonical/lxd/shared/api"
)

// refreshFlow launches one busybox instance with a proxy device, then waits at a
// gate that fails until a file "go" exists, so the run is left unfinished.
const refreshFlow = `variable "root" { type = string }

task "exec" "busybox_image" {
  command = ["bash", "scripts/busybox-image.sh"]
  dir     = var.root
}

task "lxd_image_import" "busybox" {
  file  = "${var.root}/${exec.busybox_image.stdout}"
  alias = "rfr-busybox"
}

task "lxd_launch" "member" {
  name  = "rfr-a"
  image = lxd_image_import.busybox.alias
}

task "proxy_device" "api" {
  instance = lxd_launch.member.name
  name     = "api"
  listen   = "tcp:127.0.0.1:16549"
  connect  = "tcp:127.0.0.1:8080"
}

task "exec" "gate" {
  depends_on = [proxy_device.api]
  script     = "test -f go"
}
`

// TestRefreshStartsStoppedInstance (issue 20, defect 6): a member whose launch
// succeeded is found stopped (as a daemon restart left member3); plan says its
// launch runs again and why, and the resume starts it, where it used to trust the
// checkpoint and fail downstream.
func TestRefreshStartsStoppedInstance(t *testing.T) {
	srv := requireLXD(t)
	binary(t)
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	tag, dir := newTag(t), t.TempDir()
	writeFiles(t, dir, map[string]string{"main.hcl": refreshFlow})
	vars := []string{"--var", "root=" + root}
	t.Cleanup(func() { runFlow(t, tag, dir, time.Minute, "destroy", "--auto-approve") })
	flowExit(t, tag, dir, 1, append([]string{"run", "main.hcl"}, vars...)...)
	if out, err := exec.Command("lxc", "stop", "--force", "rfr-a").CombinedOutput(); err != nil {
		t.Fatalf("lxc stop: %v\n%s", err, out)
	}
	want := `drifted since it succeeded: instance "rfr-a" is STOPPED`
	plan := flowExit(t, tag, dir, 0, append([]string{"plan", "main.hcl"}, vars...)...)
	if act, why := planned(plan.stdout); act["lxd_launch.member"] != "run" || why["lxd_launch.member"] != want {
		t.Errorf("plan does not run the stopped instance's launch again:\n%s", plan.stdout)
	}
	writeFiles(t, dir, map[string]string{"go": ""})
	r := flowExit(t, tag, dir, 0, "resume")
	if !strings.Contains(r.stdout, "lxd_launch.member: "+want+"; running it again") {
		t.Errorf("the resume did not say why the launch runs again\n%s", r.desc)
	}
	comparePlan(t, plan, r)
	if st, _, err := srv.GetInstanceState("rfr-a"); err != nil || st.StatusCode != api.Running {
		t.Errorf("rfr-a after the resume: %v, %v; want Running", st, err)
	}
}
