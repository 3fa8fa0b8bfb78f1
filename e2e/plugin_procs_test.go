package e2e

import (
	"fmt"
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
// and waits for it, deaf to cancellation (the Go marker plugin's exec.Command, a
// Python SDK plugin's subprocess), loses that sleep with its task however the run
// ends: one Ctrl-C (and flow exits within exec's 10 s grace, not 25 s), two Ctrl-Cs, a
// SIGKILL of flow, the task's timeout. No process of the run is left, and $TMPDIR
// holds no flow-plugins-* directory.
func TestPluginProcessesEnd(t *testing.T) {
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	plugins := []struct {
		name string
		src  string // the flow; TIMEOUT stands for the task's timeout line
		addr string // its task's
		need func(t *testing.T, dir string)
	}{
		{"go", `plugin "marker" {
  source = "./flow-plugin-marker"
}
task "marker" "spawn" {
  path    = "spawn.txt"
  content = "x"
  spawn   = "sleep.pid"TIMEOUT
}
`, "marker.spawn", func(*testing.T, string) {}},
		{"python", `plugin "spawn" {
  source = "./flow-plugin-spawn"
}
task "spawn" "spawn" {
  pidfile = "sleep.pid"TIMEOUT
}
`, "spawn.spawn", func(t *testing.T, dir string) {
			needPython(t)
			script := fmt.Sprintf(pythonSpawn, filepath.Join(root, "plugins", "python"))
			if err := os.WriteFile(filepath.Join(dir, "flow-plugin-spawn"), []byte(script), 0o755); err != nil {
				t.Fatal(err)
			}
		}},
	}
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
	for _, pl := range plugins {
		for _, tt := range tests {
			t.Run(pl.name+"/"+tt.name, func(t *testing.T) {
				tag := newTag(t)
				timeout := ""
				if tt.timeout != "" {
					timeout = "\n  timeout = \"" + tt.timeout + "\""
				}
				dir := pluginFlow(t, strings.Replace(pl.src, "TIMEOUT", timeout, 1))
				pl.need(t, dir)
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
					if s := status(t, tag, dir, "s.db").byAddress()[pl.addr]; s.Status != "failed" || !strings.Contains(s.Error, "timed out") {
						t.Errorf("%s = %+v, want failed by its timeout\n%s", pl.addr, s, p.describe())
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
}

// pythonSpawn is a Python SDK plugin (%s: the SDK's directory) whose spawn type
// starts sleep 3600 with subprocess, writes its pid to pidfile and waits for it.
const pythonSpawn = `#!/usr/bin/python3
import subprocess
import sys

sys.path.insert(0, %q)

from flow_plugin import STRING, TaskType, attr, serve  # noqa: E402


def run(task, ctx):
    sleep = subprocess.Popen(["sleep", "3600"])
    with open(task["pidfile"], "w") as f:
        f.write(str(sleep.pid))
    ctx.print("started sleep, pid %%d" %% sleep.pid)
    sleep.wait()
    return {}


serve([TaskType("spawn", run, attributes=[attr("pidfile", STRING, required=True)])])
`

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
