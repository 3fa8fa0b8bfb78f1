package lxd

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/zclconf/go-cty/cty"

	"github.com/flowdev/flow/internal/lxdtest"
	"github.com/flowdev/flow/tasks"
	"github.com/flowdev/flow/tasks/taskstest"
)

// These tests talk to the lab cluster (internal/lxdtest, scripts/lab-cluster.sh): three
// real LXD daemons on 127.0.0.3-5 that form one LXD cluster, reached through member c1.

// TestLaunchOnClusterMember launches on the member target names while talking to
// another (c1): the instance is there, its location says so, and exec, file push and
// destroy reach it through c1, which forwards them. A target it is not on is a
// difference that recreate resolves by moving it; a refresh sees an instance that is
// not where its launch recorded it.
func TestLaunchOnClusterMember(t *testing.T) {
	c := lxdtest.StartCluster(t)
	name := testName("cl")
	t.Cleanup(func() { _, _ = c.Lxc("delete", "--force", name) })
	l := &Launch{Remote: c.Remote(), Name: name, Image: lxdtest.ClusterImage, Target: "c2"}
	out, printed := mustValidateAndRun(t, l)
	wantContains(t, "output", printed, `on cluster member "c2"`, "started")
	if got := out["location"].AsString(); got != "c2" {
		t.Errorf("location = %q, want c2", got)
	}
	if got := clusterLocation(t, c, name); got != "c2" {
		t.Errorf("lxc list says the instance is on %q, want c2", got)
	}
	_, printed = mustValidateAndRun(t, l)
	wantContains(t, "re-run output", printed, `instance "`+name+`" already present`)

	// Through c1 to the instance on c2.
	mustValidateAndRun(t, &FilePush{Remote: c.Remote(), Instance: name, Content: ptr("on c2\n"), Destination: "/tmp/where"})
	eout, _ := mustValidateAndRun(t, &Exec{Remote: c.Remote(), Instance: name, Command: []string{"cat", "/tmp/where"}})
	if got := eout["stdout"].AsString(); got != "on c2" {
		t.Errorf("exec through c1: stdout %q, want %q", got, "on c2")
	}

	probe := func(recorded string) string {
		env, _ := taskstest.NewEnv(t)
		drift, err := l.Probe(context.Background(), env, tasks.Outputs{"location": cty.StringVal(recorded)})
		if err != nil {
			t.Fatalf("Probe: %v", err)
		}
		return drift
	}
	if drift := probe("c2"); drift != "" {
		t.Errorf("Probe on its recorded member = %q, want no drift", drift)
	}
	if drift := probe("c3"); drift != `instance "`+name+`" moved from cluster member "c3" to "c2"` {
		t.Errorf("Probe with another recorded member = %q", drift)
	}

	l.Target = "c3"
	_, _, err := validateAndRun(t, l)
	if err == nil || !strings.Contains(err.Error(), `target: instance is on member "c2", declared "c3"`) {
		t.Fatalf("Run() with another target = %v, want the difference named", err)
	}
	l.Recreate = true
	out, printed = mustValidateAndRun(t, l)
	wantContains(t, "recreate output", printed, "replacing it", `on cluster member "c3"`)
	if got := out["location"].AsString(); got != "c3" || clusterLocation(t, c, name) != "c3" {
		t.Errorf("after recreate: location %q, lxc list %q; want c3", got, clusterLocation(t, c, name))
	}

	env, printed2 := taskstest.NewEnv(t)
	if err := l.Destroy(context.Background(), env, out); err != nil {
		t.Fatalf("Destroy: %v\n%s", err, printed2)
	}
	if got, _ := c.Lxc("list", "^"+name+"$", "-c", "n", "-f", "csv"); strings.TrimSpace(got) != "" {
		t.Errorf("after Destroy the cluster still lists %q", got)
	}
}

// A target for a server that is not a cluster fails before anything is created, and
// the location of an instance there is LXD's "none".
func TestLaunchTargetOnStandaloneServer(t *testing.T) {
	name := testName("launch")
	deleteInstanceAtCleanup(t, name)
	_, _, err := validateAndRun(t, &Launch{Name: name, Image: testImage(t), Target: "c2"})
	if err == nil || err.Error() != `launch "`+name+`": target "c2": the server is not an LXD cluster` {
		t.Errorf("Run() = %v, want the server named not a cluster", err)
	}
	if lxcQuiet("info", name) == nil {
		t.Error("the instance was created")
	}
	out, _ := mustValidateAndRun(t, &Launch{Name: name, Image: testImage(t)})
	if got := out["location"].AsString(); got != "none" {
		t.Errorf("location = %q, want none", got)
	}
}

// clusterLocation is the member `lxc list` names as the instance's location.
func clusterLocation(t *testing.T, c lxdtest.Cluster, name string) string {
	t.Helper()
	out, err := c.Lxc("list", "^"+name+"$", "-c", "L", "-f", "csv")
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(out)
}

func ptr[T any](v T) *T { return &v }

// TestLaunchWhileClusterMemberDown SIGKILLs the daemon of the member a launch targets:
// the cluster refuses the create (c1 cannot reach c2), the launch retries that fault
// and, the member back 10 s later, creates the instance there, once. With the member
// left down the launch fails within its bound naming the member; the same launch
// succeeds once the member is back.
func TestLaunchWhileClusterMemberDown(t *testing.T) {
	c := lxdtest.HoldCluster(t)
	created := c.WatchCreations(t)
	name, other := testName("lost"), testName("down")
	t.Cleanup(func() { // c2 back first: a test that failed with it down still deletes them
		_, _ = c.StartMembers()
		_, _ = c.Lxc("delete", "--force", name)
		_, _ = c.Lxc("delete", "--force", other)
	})

	c.KillMember(t, "c2")
	back := make(chan error, 1)
	go func() {
		time.Sleep(10 * time.Second)
		out, err := c.StartMembers()
		if err != nil {
			err = fmt.Errorf("%w\n%s", err, out)
		}
		back <- err
	}()
	l := &Launch{Remote: c.Remote(), Name: name, Image: lxdtest.ClusterImage, Target: "c2"}
	out, printed := mustValidateAndRun(t, l)
	if err := <-back; err != nil {
		t.Fatalf("start c2 again: %v", err)
	}
	wantContains(t, "output", printed, "transient fault: connection refused", `on cluster member "c2"`, "started")
	if got := out["location"].AsString(); got != "c2" || clusterLocation(t, c, name) != "c2" {
		t.Errorf("location %q, lxc list %q; want c2", got, clusterLocation(t, c, name))
	}
	if n := created(name); n != 1 {
		t.Errorf("instance %s was created %d times, want once", name, n)
	}

	c.KillMember(t, "c2")
	env, _ := taskstest.NewEnv(t)
	env.TransientRetry = 5 * time.Second
	l2 := &Launch{Remote: c.Remote(), Name: other, Image: lxdtest.ClusterImage, Target: "c2"}
	if err := l2.Validate(); err != nil {
		t.Fatal(err)
	}
	_, err := l2.Run(context.Background(), env)
	if err == nil || !strings.Contains(err.Error(), `create on cluster member "c2"`) || !strings.Contains(err.Error(), "retried for") {
		t.Fatalf("Run() with c2 down = %v, want the member named after the retries", err)
	}
	if out, err := c.StartMembers(); err != nil {
		t.Fatalf("start c2 again: %v\n%s", err, out)
	}
	if out, _ := mustValidateAndRun(t, l2); out["location"].AsString() != "c2" {
		t.Errorf("after c2 is back: location %q, want c2", out["location"].AsString())
	}
	if n := created(other); n != 1 {
		t.Errorf("instance %s was created %d times, want once", other, n)
	}
}

// TestLaunchTargetGroup creates the instance in a cluster group (every cluster has
// "default", holding every member): LXD's scheduler picks the member, location names
// it, and a re-run finds the instance in the group.
func TestLaunchTargetGroup(t *testing.T) {
	c := lxdtest.StartCluster(t)
	name := testName("grp")
	t.Cleanup(func() { _, _ = c.Lxc("delete", "--force", name) })
	l := &Launch{Remote: c.Remote(), Name: name, Image: lxdtest.ClusterImage, TargetGroup: "default"}
	out, printed := mustValidateAndRun(t, l)
	wantContains(t, "output", printed, `on cluster member "@default"`, "started")
	if got := out["location"].AsString(); got == "" || got != clusterLocation(t, c, name) {
		t.Errorf("location %q, lxc list %q; want the same member", got, clusterLocation(t, c, name))
	}
	_, printed = mustValidateAndRun(t, l)
	wantContains(t, "re-run output", printed, `instance "`+name+`" already present`)
}
