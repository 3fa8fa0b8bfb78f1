package lxd

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/flowdev/flow/tasks/taskstest"
	"github.com/zclconf/go-cty/cty"
)

func TestLaunchCreatesStartsAndWaits(t *testing.T) {
	name := testName("launch")
	deleteInstanceAtCleanup(t, name)
	l := &Launch{
		Name:    name,
		Image:   testImage(t),
		Config:  map[string]string{"user.flow": "1", "user.empty": ""}, // "" unsets: LXD stores no empty values
		Devices: map[string]map[string]string{"tmp2": {"type": "disk", "source": t.TempDir(), "path": "/mnt/tmp2"}},
		// init brings loopback up from rcS; readiness is "lo is UP".
		WaitFor:     []string{"sh", "-c", "ip link show lo | grep -q UP"},
		WaitTimeout: "30s",
	}
	out, printed := mustValidateAndRun(t, l)
	wantContains(t, "output", printed, "creating instance", "started", "ready after")
	if got := out["status"].AsString(); got != "Running" {
		t.Errorf("status = %q, want Running", got)
	}
	for _, k := range []string{"ipv4", "ipv6"} {
		if v := out[k]; !v.Type().Equals(cty.List(cty.String)) || v.LengthInt() != 0 {
			t.Errorf("%s = %#v, want an empty list (no NIC)", k, v)
		}
	}
	if got := lxcGet(t, "config", "get", name, "user.flow"); got != "1" {
		t.Errorf("user.flow = %q, want 1", got)
	}

	_, printed = mustValidateAndRun(t, l)
	wantContains(t, "re-run output", printed, `instance "`+name+`" already present`, "ready after")
	if strings.Contains(printed, "creating") {
		t.Errorf("re-run created the instance again:\n%s", printed)
	}

	// Declaring the image by fingerprint prefix is the same image.
	l.Image = imageFingerprint(t, testImage(t))[:12]
	lxc(t, "stop", "--force", name)
	_, printed = mustValidateAndRun(t, l)
	wantContains(t, "output after stop", printed, `instance "`+name+`" started`)
	if got := lxcGet(t, "list", name, "-c", "s", "-f", "csv"); got != "RUNNING" {
		t.Errorf("state = %q, want RUNNING", got)
	}
}

func TestLaunchDiffersFailsThenRecreateReplaces(t *testing.T) {
	name := testName("launch")
	deleteInstanceAtCleanup(t, name)
	lxc(t, "launch", testImage(t), name, "-c", "user.flow=old")
	oldUUID := lxcGet(t, "config", "get", name, "volatile.uuid")

	l := &Launch{Name: name, Image: testImage(t), Profiles: []string{}, Ephemeral: true,
		Config:  map[string]string{"user.flow": "new"},
		Devices: map[string]map[string]string{"root": {"type": "disk", "path": "/", "pool": "default"}},
	}
	_, _, err := validateAndRun(t, l)
	if err == nil {
		t.Fatal("Run() on a differing instance succeeded")
	}
	wantContains(t, "error", err.Error(),
		`launch "`+name+`": exists but differs`,
		`profiles: instance has ["default"], declared []`,
		`config "user.flow": instance has "old", declared "new"`,
		`device "root": declared, but the instance has no such device`,
		"ephemeral: instance has false, declared true",
		"recreate = true")

	l.Recreate = true
	_, printed := mustValidateAndRun(t, l)
	wantContains(t, "output", printed, "replacing it", "started")
	if got := lxcGet(t, "config", "get", name, "volatile.uuid"); got == oldUUID {
		t.Error("recreate kept the old instance")
	}
	if got := lxcGet(t, "config", "get", name, "user.flow"); got != "new" {
		t.Errorf("user.flow = %q, want new", got)
	}
	_, printed = mustValidateAndRun(t, l)
	wantContains(t, "re-run output", printed, "already present")
}

func TestLaunchOtherImageIsADifference(t *testing.T) {
	name := testName("launch")
	deleteInstanceAtCleanup(t, name)
	lxc(t, "init", testImage(t), name)
	lxc(t, "config", "set", name, "volatile.base_image", strings.Repeat("0", 64))
	_, _, err := validateAndRun(t, &Launch{Name: name, Image: testImage(t)})
	if err == nil || !strings.Contains(err.Error(), `image: instance was created from 000000000000, declared "`+testImage(t)+`" is `) {
		t.Errorf("Run() = %v, want the image difference named", err)
	}
}

func TestLaunchUnknownImage(t *testing.T) {
	name := testName("launch")
	deleteInstanceAtCleanup(t, name)
	_, _, err := validateAndRun(t, &Launch{Name: name, Image: "tlxd-nosuch"})
	if err == nil || err.Error() != `launch "`+name+`": image "tlxd-nosuch" not found` {
		t.Errorf("Run() = %v, want `launch %q: image \"tlxd-nosuch\" not found`", err, name)
	}
}

func TestLaunchWaitForTimeoutShowsLastOutput(t *testing.T) {
	name := testName("launch")
	deleteInstanceAtCleanup(t, name)
	defer func(d time.Duration) { waitForProgress = d }(waitForProgress)
	waitForProgress = time.Second
	start := time.Now()
	_, printed, err := validateAndRun(t, &Launch{Name: name, Image: testImage(t),
		WaitFor: []string{"sh", "-c", "echo not yet; echo oops >&2; exit 3"}, WaitTimeout: "3s"})
	if err == nil {
		t.Fatal("Run() succeeded although wait_for never exits 0")
	}
	wantContains(t, "error", err.Error(), "did not exit 0 within 3s", "last exit code 3", "not yet", "oops")
	wantContains(t, "output", printed, `waiting for ["sh" "-c" "echo not yet; echo oops >&2; exit 3"] in "`+name+`": `, "last exit code 3")
	if d := time.Since(start); d > 60*time.Second {
		t.Errorf("Run() took %s", d)
	}
	// A program the image lacks is an unsuccessful probe too, with LXD's reason.
	_, _, err = validateAndRun(t, &Launch{Name: name, Image: testImage(t), WaitFor: []string{"no-such-program"}, WaitTimeout: "1s"})
	if err == nil || !strings.Contains(err.Error(), "did not exit 0 within 1s") {
		t.Errorf("Run() with a missing wait_for program = %v", err)
	}
}

func TestLaunchCancelDuringWaitFor(t *testing.T) {
	name := testName("launch")
	deleteInstanceAtCleanup(t, name)
	l := &Launch{Name: name, Image: testImage(t), WaitFor: []string{"false"}, WaitTimeout: "5m"}
	if err := l.Validate(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	env, buf := taskstest.NewEnv(t)
	done := make(chan error, 1)
	go func() {
		_, err := l.Run(ctx, env)
		done <- err
	}()
	// Cancel once polling has started: the instance runs, so wait_for is next.
	deadline := time.Now().Add(90 * time.Second)
	for !strings.Contains(buf.String(), "started") {
		if time.Now().After(deadline) {
			t.Fatalf("instance did not start:\n%s", buf.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(700 * time.Millisecond)
	cancel()
	cancelled := time.Now()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Run() = %v, want context.Canceled", err)
		}
		if d := time.Since(cancelled); d > 2*time.Second {
			t.Errorf("Run() returned %s after cancel, want promptly", d)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run() did not return within 10s of cancel")
	}
}

// A wait_for probe that hangs is killed when wait_timeout passes: it must not
// stay behind in the instance (nor its streams in flow) after Run returns.
func TestLaunchWaitForTimeoutKillsHungProbe(t *testing.T) {
	name := testName("launch")
	deleteInstanceAtCleanup(t, name)
	_, _, err := validateAndRun(t, &Launch{Name: name, Image: testImage(t), WaitFor: []string{"sleep", "1234"}, WaitTimeout: "2s"})
	if err == nil || !strings.Contains(err.Error(), "did not exit 0 within 2s") {
		t.Fatalf("Run() = %v, want a wait_for timeout", err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		ps := inside(t, name, "ps -o args | grep '^sleep 1234' || true")
		if ps == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the timed-out probe still runs in the instance:\n%s", ps)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// An image deleted after the launch does not fail the re-run of an instance
// created from it: there is nothing to compare, and the instance is as declared.
func TestLaunchRerunAfterItsImageWasDeleted(t *testing.T) {
	name, alias := testName("launch"), testName("alias")
	deleteInstanceAtCleanup(t, name)
	lxc(t, "image", "alias", "create", alias, imageFingerprint(t, testImage(t)))
	t.Cleanup(func() { _ = lxcQuiet("image", "alias", "delete", alias) })
	l := &Launch{Name: name, Image: alias}
	mustValidateAndRun(t, l)
	lxc(t, "image", "alias", "delete", alias)

	_, printed := mustValidateAndRun(t, l)
	wantContains(t, "re-run output", printed, "is no longer in the image store", `instance "`+name+`" already present`)

	l.Name = testName("launch")
	deleteInstanceAtCleanup(t, l.Name)
	if _, _, err := validateAndRun(t, l); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("launching a new instance from the deleted image: %v, want not found", err)
	}
}

// halfMadeInstance makes, through the API, what a daemon killed during a create
// from image leaves: an instance that names its base image and has no root
// filesystem, never templated and never started. started marks it as having run.
func halfMadeInstance(t *testing.T, name string, started bool) {
	t.Helper()
	deleteInstanceAtCleanup(t, name)
	lxc(t, "init", "--empty", name, "-c", "volatile.base_image="+imageFingerprint(t, testImage(t)))
	lxc(t, "config", "unset", name, "volatile.apply_template")
	if started {
		lxc(t, "config", "set", name, "volatile.last_state.power=STOPPED")
	}
}

func TestLaunchReplacesHalfMadeInstance(t *testing.T) {
	name := testName("launch")
	halfMadeInstance(t, name, false)
	oldUUID := lxcGet(t, "config", "get", name, "volatile.uuid")

	_, printed := mustValidateAndRun(t, &Launch{Name: name, Image: testImage(t)})
	wantContains(t, "output", printed, "does not start", "it was never whole", "creating instance", `instance "`+name+`" started`)
	if got := lxcGet(t, "list", name, "-c", "s", "-f", "csv"); got != "RUNNING" {
		t.Errorf("state = %q, want RUNNING", got)
	}
	if lxcGet(t, "config", "get", name, "volatile.uuid") == oldUUID {
		t.Error("the half-made instance is still there, started")
	}
}

func TestLaunchKeepsStartedInstanceThatFailsToStart(t *testing.T) {
	name := testName("launch")
	halfMadeInstance(t, name, true)
	oldUUID := lxcGet(t, "config", "get", name, "volatile.uuid")

	_, printed, err := validateAndRun(t, &Launch{Name: name, Image: testImage(t)})
	if err == nil || !strings.HasPrefix(err.Error(), `launch "`+name+`": start: `) {
		t.Errorf("Run error = %v, want the start's", err)
	}
	if strings.Contains(printed, "creating") {
		t.Errorf("output:\n%s\nwant no create", printed)
	}
	if lxcGet(t, "config", "get", name, "volatile.uuid") != oldUUID {
		t.Error("an instance that ran before was replaced")
	}
}
