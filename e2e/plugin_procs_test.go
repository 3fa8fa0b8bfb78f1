package e2e

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flowdev/flow/internal/procgroup"
)

// TestPluginProcessesEnd (issue 37, finding 8): a plugin whose Run starts sleep 3600
// and waits for it, deaf to cancellation, loses that sleep with its task however the
// run ends: one Ctrl-C (and flow exits within exec's 10 s grace, not 25 s), two
// Ctrl-Cs, a SIGKILL of flow, the task's timeout. No process of the run is left, and
// $TMPDIR holds no flow-plugins-* directory.
func TestPluginProcessesEnd(t *testing.T) {
	tests := []struct {
		name    string
		timeout string                           // the task's, "" for none
		end     func(t *testing.T, p *proc) bool // ends the run; false: it did not
		within  time.Duration                    // how soon flow must exit
	}{
		{"one SIGINT", "", func(t *testing.T, p *proc) bool {
			p.signal(t, syscall.SIGINT)
			return p.wait(13 * time.Second)
		}, 13 * time.Second},
		{"two SIGINTs", "", func(t *testing.T, p *proc) bool {
			p.signal(t, syscall.SIGINT)
			time.Sleep(300 * time.Millisecond)
			p.signal(t, syscall.SIGINT)
			return p.wait(5 * time.Second)
		}, 5 * time.Second},
		{"SIGKILL", "", func(t *testing.T, p *proc) bool {
			p.signal(t, syscall.SIGKILL)
			return p.wait(5 * time.Second)
		}, 5 * time.Second},
		{"timeout", "2s", func(t *testing.T, p *proc) bool {
			return p.wait(30 * time.Second)
		}, 30 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tag := newTag(t)
			timeout := ""
			if tt.timeout != "" {
				timeout = "\n  timeout = \"" + tt.timeout + "\""
			}
			dir := pluginFlow(t, `plugin "marker" {
  source = "./flow-plugin-marker"
}
task "marker" "spawn" {
  path    = "spawn.txt"
  content = "x"
  spawn   = "sleep.pid"`+timeout+`
}
`)
			// The flow processes' $TMPDIR; short, as a plugin's socket path must be.
			tmp, err := os.MkdirTemp("", "e2e-tmp-")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(tmp) })
			t.Setenv("TMPDIR", tmp)
			p := start(t, tag, dir, "run", "flow.hcl", "--state", "s.db")
			pid, began := spawned(t, p, filepath.Join(dir, "sleep.pid"))
			ending := time.Now()
			if !tt.end(t, p) {
				t.Fatalf("flow did not exit within %s\n%s", tt.within, p.describe())
			}
			t.Logf("flow exited %s after the run's end began", p.ended.Sub(ending).Round(time.Millisecond))
			if tt.timeout != "" {
				if s := status(t, tag, dir, "s.db").byAddress()["marker.spawn"]; s.Status != "failed" || !strings.Contains(s.Error, "timed out") {
					t.Errorf("marker.spawn = %+v, want failed by its timeout\n%s", s, p.describe())
				}
			}
			for end := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
				info, _ := procgroup.Inspect(pid)
				left := tagged(tag)
				if !(info.Alive && info.Start == began) && len(left) == 0 {
					break
				}
				if time.Now().After(end) {
					t.Errorf("after flow exited: the plugin's sleep (pid %d) still runs: %v; processes of the run left: %v\n%s",
						pid, info.Alive && info.Start == began, left, p.describe())
					break
				}
			}
			for end := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
				left, _ := os.ReadDir(tmp)
				if len(left) == 0 {
					break
				}
				if time.Now().After(end) {
					t.Errorf("$TMPDIR holds %s after flow exited", left[0].Name())
					break
				}
			}
		})
	}
}

// spawned waits for the plugin's sleep to write its pid to file and returns the pid
// and the process's start time (with the pid, that process and no later one).
func spawned(t *testing.T, p *proc, file string) (int, uint64) {
	t.Helper()
	for end := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if b, err := os.ReadFile(file); err == nil && len(b) > 0 {
			pid, err := strconv.Atoi(string(b))
			if err != nil {
				t.Fatalf("%s holds %q", file, b)
			}
			info, err := procgroup.Inspect(pid)
			if err != nil || !info.Alive {
				t.Fatalf("the plugin's sleep (pid %d) is not running: %+v, %v", pid, info, err)
			}
			return pid, info.Start
		}
		if time.Now().After(end) || p.exited() {
			t.Fatalf("the plugin never started its sleep\n%s", p.describe())
		}
	}
}
