package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/flowdev/flow/internal/lxdtest"
)

// hostBRestartFlow launches instances on host B in two waves with a slow command in
// between, so that host B's daemon can be killed while the run is in its middle.
const hostBRestartFlow = `variable "root" { type = string }
variable "name" { type = string }
variable "b" { type = map(string) }

task "exec" "busybox_image" {
  command = ["bash", "scripts/busybox-image.sh"]
  dir     = var.root
}

task "lxd_image_import" "busybox" {
  remote = var.b
  file   = "${var.root}/${exec.busybox_image.stdout}"
  alias  = "${var.name}-img"
}

task "lxd_launch" "first" {
  for_each = toset(["1", "2"])
  remote   = var.b
  name     = "${var.name}-${each.key}"
  image    = lxd_image_import.busybox.alias
}

task "lxd_exec" "slow" {
  for_each = toset(["1", "2"])
  remote   = var.b
  instance = lxd_launch.first[each.key].name
  command  = ["sleep", "8"]
}

task "lxd_launch" "second" {
  remote     = var.b
  name       = "${var.name}-3"
  image      = lxd_image_import.busybox.alias
  depends_on = [lxd_exec.slow]
}
`

// TestHostBDaemonKilledMidRun (issue 29): host B's daemon is SIGKILLed and started again
// while a run works on it (inside lxd_exec.slow, before the second wave). The run, or
// one resume, finishes: every instance runs on host B, made once, and flow destroy
// removes them and the image.
func TestHostBDaemonKilledMidRun(t *testing.T) {
	hb := lxdtest.HoldHostB(t)
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	tag, dir := newTag(t), t.TempDir()
	name := "e2e-hbk-" + tag
	names := []string{name + "-1", name + "-2", name + "-3"}
	writeFiles(t, dir, map[string]string{"f.hcl": hostBRestartFlow})
	t.Cleanup(func() {
		for _, n := range names {
			_, _ = hb.Lxc("delete", "--force", n)
		}
		_, _ = hb.Lxc("image", "delete", name+"-img")
	})
	r := hb.Remote()
	remote := fmt.Sprintf(`{address=%q, client_cert=%q, client_key=%q, server_cert=%q}`, r["address"], r["client_cert"], r["client_key"], r["server_cert"])
	args := []string{"run", "f.hcl", "--state", "f.db", "--var", "root=" + root, "--var", "name=" + name, "--var", "b=" + remote}

	p := start(t, tag, dir, args...)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the run:\n%s", tail(p.describe(), 40))
		}
	})
	waitStatus(t, tag, dir, "f.db", 2*time.Minute, "lxd_exec.slow running", func(d statusDoc) bool {
		for _, task := range d.Tasks {
			if strings.HasPrefix(task.Address, "lxd_exec.slow") && task.Status == "running" {
				return true
			}
		}
		return false
	})
	killedAt := time.Now()
	hb.KillAndRestart(t)
	if !p.wait(3 * time.Minute) {
		p.killGroup()
		t.Fatalf("flow did not end after host B came back\n%s", p.describe())
	}
	for _, line := range strings.Split(p.stdout.String()+p.stderr.String(), "\n") {
		if strings.Contains(line, "transient fault") {
			t.Logf("after the kill: %s", line)
		}
	}
	if p.code() != 0 {
		t.Logf("the run ended with %d after host B's restart; resuming\n%s", p.code(), tail(p.describe(), 20))
		flowExit(t, tag, dir, 0, "resume", "--state", "f.db")
	}
	for _, n := range names {
		out, err := hb.Lxc("list", "^"+n+"$", "-c", "ns", "-f", "csv")
		if err != nil || strings.TrimSpace(out) != n+",RUNNING" {
			t.Errorf("instance %s on host B: %q (%v), want it running", n, out, err)
		}
	}

	// The first wave ran before the kill: made once, it was created before it.
	for _, n := range names[:2] {
		out, err := hb.Lxc("query", "/1.0/instances/"+n)
		var inst struct {
			CreatedAt time.Time `json:"created_at"`
		}
		if err != nil || json.Unmarshal([]byte(out), &inst) != nil {
			t.Errorf("query %s on host B: %v", n, err)
		} else if inst.CreatedAt.After(killedAt) {
			t.Errorf("%s was created again after host B's restart (%s, kill at %s)", n, inst.CreatedAt, killedAt)
		}
	}

	flowExit(t, tag, dir, 0, "destroy", "--state", "f.db", "--auto-approve")
	for _, n := range names {
		if out, _ := hb.Lxc("list", "^"+n+"$", "-c", "n", "-f", "csv"); strings.TrimSpace(out) != "" {
			t.Errorf("destroy left %s on host B", n)
		}
	}
	if _, err := hb.Lxc("image", "info", name+"-img"); err == nil {
		t.Errorf("destroy left image %s-img on host B", name)
	}
}
