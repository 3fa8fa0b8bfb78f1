package lxd

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/flowdev/flow/tasks"
	"github.com/flowdev/flow/tasks/taskstest"
)

// TestProbeSeesDrift: a launch and a proxy device that succeeded are probed as the
// world changes under them: stopped, device removed, deleted. Each change must be
// reported, and nothing changed must report nothing (the refresh of issue 20).
func TestProbeSeesDrift(t *testing.T) {
	name := testName("p")
	deleteInstanceAtCleanup(t, name)
	launch := &Launch{Name: name, Image: testImage(t)}
	mustValidateAndRun(t, launch)
	proxy := &ProxyDevice{Instance: name, Name: "web", Listen: fmt.Sprintf("tcp:127.0.0.1:%d", freePort(t)), Connect: "tcp:127.0.0.1:8080"}
	mustValidateAndRun(t, proxy)
	steps := []struct {
		change      []string // lxc arguments; nil: nothing changes
		launchDrift string   // a part of Launch.Probe's answer; "" none
		proxyDrift  string
	}{
		{change: nil},
		{change: []string{"stop", "--force", name}, launchDrift: `instance "` + name + `" is STOPPED`},
		{change: []string{"start", name}},
		{change: []string{"config", "device", "remove", name, "web"}, proxyDrift: `device "web" is gone from instance "` + name + `"`},
		{change: []string{"delete", "--force", name}, launchDrift: `instance "` + name + `" is gone`, proxyDrift: `instance "` + name + `" is gone`},
	}
	for _, s := range steps {
		if s.change != nil {
			lxc(t, s.change...)
		}
		for _, c := range []struct {
			task tasks.Prober
			want string
		}{{launch, s.launchDrift}, {proxy, s.proxyDrift}} {
			env, _ := taskstest.NewEnv(t)
			got, err := c.task.Probe(context.Background(), env, nil)
			switch {
			case err != nil:
				t.Errorf("after lxc %v: %T.Probe: %v", s.change, c.task, err)
			case c.want == "" && got != "", c.want != "" && !strings.Contains(got, c.want):
				t.Errorf("after lxc %v: %T.Probe = %q, want %q", s.change, c.task, got, c.want)
			}
		}
	}
}
