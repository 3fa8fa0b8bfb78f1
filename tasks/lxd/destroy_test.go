package lxd

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/flowdev/flow/tasks"
	"github.com/flowdev/flow/tasks/taskstest"
)

// destroy calls Destroy the way flow destroy does and returns what it printed.
func destroy(t *testing.T, d tasks.Destroyer) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	env, printed := taskstest.NewEnv(t)
	if err := d.Destroy(ctx, env, nil); err != nil {
		t.Fatalf("Destroy() = %v\noutput:\n%s", err, printed)
	}
	return printed.String()
}

// TestDestroyUndoesLaunchProxyProfile: flow destroy's order (the proxy device, then
// the instance, then its profile) removes each, and a second destroy finds each
// already absent.
func TestDestroyUndoesLaunchProxyProfile(t *testing.T) {
	name := fmt.Sprintf("wt12-destroy-%d", os.Getpid()%100000)
	deleteInstanceAtCleanup(t, name)
	prof := testName("prof")
	deleteProfileAtCleanup(t, prof)
	profile := &Profile{Name: prof, Config: map[string]string{"user.flow": "destroy-test"}}
	launch := &Launch{Name: name, Image: testImage(t), Profiles: []string{"default", prof}}
	proxy := &ProxyDevice{Instance: name, Name: "web", Listen: fmt.Sprintf("tcp:127.0.0.1:%d", freePort(t)), Connect: "tcp:127.0.0.1:8080"}
	for _, task := range []tasks.Task{profile, launch, proxy} {
		mustValidateAndRun(t, task)
	}

	wantContains(t, "proxy destroy", destroy(t, proxy), `proxy "web" on "`+name+`" removed`)
	if got := lxc(t, "config", "device", "list", name); strings.TrimSpace(got) != "" {
		t.Errorf("devices after destroy: %q", got)
	}
	wantContains(t, "launch destroy", destroy(t, launch), `instance "`+name+`" deleted`)
	if lxcQuiet("info", name) == nil {
		t.Errorf("instance %s exists after destroy", name)
	}
	wantContains(t, "profile destroy", destroy(t, profile), `profile "`+prof+`" deleted`)

	wantContains(t, "second proxy destroy", destroy(t, proxy), `instance "`+name+`" already absent`)
	wantContains(t, "second launch destroy", destroy(t, launch), `instance "`+name+`" already absent`)
	wantContains(t, "second profile destroy", destroy(t, profile), `profile "`+prof+`" already absent`)
}

func TestDestroyUndoesImageImport(t *testing.T) {
	alias := testName("img")
	file := testImageFiles(t, alias, false)[0]
	deleteImageAtCleanup(t, sha256Files(t, file))
	i := &ImageImport{File: file, Alias: alias}
	mustValidateAndRun(t, i)
	wantContains(t, "destroy", destroy(t, i), `image "`+alias+`" deleted`)
	if lxcQuiet("image", "show", alias) == nil {
		t.Errorf("image %s exists after destroy", alias)
	}
	wantContains(t, "second destroy", destroy(t, i), `image "`+alias+`" already absent`)
}
