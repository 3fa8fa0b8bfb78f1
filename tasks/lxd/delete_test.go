package lxd

import (
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"
)

func TestDeleteRemovesWhatExistsAndSkipsTheRest(t *testing.T) {
	running, stopped, absent := testName("del"), testName("del"), testName("del")
	profile, alias := testName("delprof"), testName("delimg")
	deleteProfileAtCleanup(t, profile)
	for _, n := range []string{running, stopped} {
		deleteInstanceAtCleanup(t, n)
	}
	lxc(t, "profile", "create", profile)
	lxc(t, "launch", testImage(t), running, "--profile", "default", "--profile", profile)
	lxc(t, "init", testImage(t), stopped)
	files := testImageFiles(t, alias, false)
	deleteImageAtCleanup(t, sha256Files(t, files...))
	lxc(t, "image", "import", files[0], "--alias", alias)

	d := &Delete{
		Instances: []string{running, absent, stopped},
		Profiles:  []string{profile},
		Images:    []string{alias},
	}
	out, printed := mustValidateAndRun(t, d)
	want := []string{"instance/" + running, "instance/" + stopped, "profile/" + profile, "image/" + alias}
	if got := listStrings(out["deleted"]); !slices.Equal(got, want) {
		t.Errorf("deleted = %q, want %q", got, want)
	}
	wantContains(t, "output", printed, `instance "`+absent+`" already absent`, `instance "`+running+`" deleted`)
	for _, args := range [][]string{{"info", running}, {"info", stopped}, {"profile", "show", profile}, {"image", "info", alias}} {
		if exec.Command("lxc", args...).Run() == nil {
			t.Errorf("lxc %s: still exists", strings.Join(args, " "))
		}
	}

	out, printed = mustValidateAndRun(t, d)
	if got := listStrings(out["deleted"]); len(got) != 0 {
		t.Errorf("re-run deleted %q, want nothing", got)
	}
	wantContains(t, "re-run output", printed, `profile "`+profile+`" already absent`, `image "`+alias+`" already absent`)
}

func TestDeleteRefusesRunningInstanceWithoutForce(t *testing.T) {
	name := testName("del")
	deleteInstanceAtCleanup(t, name)
	lxc(t, "launch", testImage(t), name)
	force := false
	_, _, err := validateAndRun(t, &Delete{Instances: []string{name}, Force: &force})
	if err == nil || err.Error() != `delete instance "`+name+`": is Running and force is false` {
		t.Errorf("Run() = %v, want the running instance named", err)
	}
	if exec.Command("lxc", "info", name).Run() != nil {
		t.Error("instance was deleted although force is false")
	}
}

func TestDeleteProfileInUse(t *testing.T) {
	name, profile := testName("del"), testName("delprof")
	deleteProfileAtCleanup(t, profile) // cleanups run last first: the instance goes first
	deleteInstanceAtCleanup(t, name)
	lxc(t, "profile", "create", profile)
	lxc(t, "init", testImage(t), name, "--profile", "default", "--profile", profile)
	_, _, err := validateAndRun(t, &Delete{Profiles: []string{profile}})
	if err == nil {
		t.Fatal("Run() deleted a profile in use")
	}
	wantContains(t, "error", err.Error(), `delete profile "`+profile+`":`, "in use")
}

func listStrings(v cty.Value) []string {
	var out []string
	for _, e := range v.AsValueSlice() {
		out = append(out, e.AsString())
	}
	return out
}

// An image that another alias also names is not this flow's to delete: only the
// listed alias goes.
func TestDeleteKeepsAnImageOtherAliasesName(t *testing.T) {
	alias, other := testName("delimg"), testName("delimg")
	files := testImageFiles(t, alias, false)
	fingerprint := sha256Files(t, files...)
	deleteImageAtCleanup(t, fingerprint)
	lxc(t, "image", "import", files[0], "--alias", alias)
	lxc(t, "image", "alias", "create", other, fingerprint)

	out, _ := mustValidateAndRun(t, &Delete{Images: []string{alias}})
	if got := listStrings(out["deleted"]); !slices.Equal(got, []string{"image/" + alias}) {
		t.Errorf("deleted = %q", got)
	}
	if exec.Command("lxc", "image", "info", alias).Run() == nil {
		t.Errorf("alias %s still exists", alias)
	}
	if exec.Command("lxc", "image", "info", other).Run() != nil {
		t.Errorf("the image named by %s was deleted with %s", other, alias)
	}
}
