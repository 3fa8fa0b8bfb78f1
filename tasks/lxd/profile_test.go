package lxd

import (
	"strings"
	"testing"
)

func TestProfileCreateThenAlreadyPresent(t *testing.T) {
	name := testName("prof")
	deleteProfileAtCleanup(t, name)
	p := &Profile{
		Name:        name,
		Config:      map[string]string{"security.nesting": "true", "user.flow": "x"},
		Devices:     map[string]map[string]string{"kmsg": {"type": "unix-char", "source": "/dev/kmsg", "path": "/dev/kmsg"}},
		Description: "made by flow",
	}
	out, printed := mustValidateAndRun(t, p)
	if got := out["name"].AsString(); got != name {
		t.Errorf("output name = %q, want %q", got, name)
	}
	wantContains(t, "output", printed, "created")
	if got := lxcGet(t, "profile", "get", name, "security.nesting"); got != "true" {
		t.Errorf("security.nesting = %q, want true", got)
	}
	wantContains(t, "lxc profile show", lxc(t, "profile", "show", name), "description: made by flow", "source: /dev/kmsg")

	_, printed = mustValidateAndRun(t, p)
	wantContains(t, "re-run output", printed, `profile "`+name+`" already present`)
}

func TestProfileDiffersFailsThenRecreateUpdatesInPlace(t *testing.T) {
	name := testName("prof")
	deleteProfileAtCleanup(t, name)
	lxc(t, "profile", "create", name)
	lxc(t, "profile", "set", name, "security.nesting", "false")
	lxc(t, "profile", "set", name, "user.stale", "1")
	lxc(t, "profile", "device", "add", name, "old", "unix-char", "source=/dev/null", "path=/dev/old")
	// A profile in use cannot be deleted; recreate must update it in place.
	inst := testName("inst")
	deleteInstanceAtCleanup(t, inst)
	lxc(t, "init", testImage(t), inst, "--profile", "default", "--profile", name)

	p := &Profile{
		Name:    name,
		Config:  map[string]string{"security.nesting": "true"},
		Devices: map[string]map[string]string{"kmsg": {"type": "unix-char", "source": "/dev/kmsg", "path": "/dev/kmsg"}},
	}
	_, _, err := validateAndRun(t, p)
	if err == nil {
		t.Fatal("Run() on a differing profile succeeded, want an error naming the differences")
	}
	wantContains(t, "error", err.Error(),
		`profile "`+name+`": exists but differs`,
		`config "security.nesting": profile has "false", declared "true"`,
		`config "user.stale": profile has "1", not declared`,
		`device "kmsg": declared, but the profile has no such device`,
		`device "old": the profile has it, not declared`,
		"recreate = true")
	if got := lxcGet(t, "profile", "get", name, "security.nesting"); got != "false" {
		t.Errorf("failed run changed the profile: security.nesting = %q", got)
	}

	p.Recreate = true
	_, printed := mustValidateAndRun(t, p)
	wantContains(t, "output", printed, "updated")
	show := lxc(t, "profile", "show", name)
	wantContains(t, "lxc profile show", show, "security.nesting: \"true\"", "kmsg:")
	if strings.Contains(show, "user.stale") || strings.Contains(show, "/dev/old") {
		t.Errorf("recreate kept undeclared config or devices:\n%s", show)
	}
	_, printed = mustValidateAndRun(t, p)
	wantContains(t, "re-run output", printed, "already present")
}

func TestProfileChangedDeviceKeyIsNamed(t *testing.T) {
	name := testName("prof")
	deleteProfileAtCleanup(t, name)
	p := &Profile{Name: name, Devices: map[string]map[string]string{"k": {"type": "unix-char", "source": "/dev/kmsg", "path": "/dev/kmsg"}}}
	mustValidateAndRun(t, p)
	p.Devices["k"]["path"] = "/dev/kmsg2"
	_, _, err := validateAndRun(t, p)
	if err == nil || !strings.Contains(err.Error(), `device "k" key "path": profile has "/dev/kmsg", declared "/dev/kmsg2"`) {
		t.Errorf("Run() = %v, want the changed device key named", err)
	}
}

func TestProfileRejectedConfigKey(t *testing.T) {
	name := testName("prof")
	deleteProfileAtCleanup(t, name)
	_, _, err := validateAndRun(t, &Profile{Name: name, Config: map[string]string{"no.such.key": "1"}})
	if err == nil {
		t.Fatal("Run() with an unknown config key succeeded")
	}
	wantContains(t, "error", err.Error(), `profile "`+name+`": create:`, "no.such.key")
}

// LXD stores no key whose value is empty: a declared "" means "unset", and a
// re-run must find the profile as declared rather than differing.
func TestProfileEmptyValueMeansUnset(t *testing.T) {
	name := testName("prof")
	deleteProfileAtCleanup(t, name)
	p := &Profile{
		Name:    name,
		Config:  map[string]string{"user.flow": "1", "user.empty": ""},
		Devices: map[string]map[string]string{"kmsg": {"type": "unix-char", "source": "/dev/kmsg", "path": "/dev/kmsg", "mode": ""}},
	}
	mustValidateAndRun(t, p)
	_, printed := mustValidateAndRun(t, p)
	wantContains(t, "re-run output", printed, `profile "`+name+`" already present`)

	lxc(t, "profile", "set", name, "user.empty", "x")
	_, _, err := validateAndRun(t, p)
	if err == nil || !strings.Contains(err.Error(), `config "user.empty": profile has "x", declared ""`) {
		t.Errorf("Run() = %v, want the set key named", err)
	}
}
