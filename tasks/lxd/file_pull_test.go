package lxd

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flowdev/flow/tasks/taskstest"
	"github.com/zclconf/go-cty/cty"
)

func TestFilePullValidate(t *testing.T) {
	taskstest.CheckValidate(t, []taskstest.ValidateCase{
		{Name: "file", Task: &FilePull{Instance: "m1", Source: "/etc/hosts", Destination: "hosts"}},
		{Name: "tree with mode", Task: &FilePull{Instance: "m1", Source: "/etc", Destination: "etc", Mode: "0644", Recursive: true}},
		{Name: "bad remote", Task: &FilePull{Remote: map[string]string{"socket": "/s", "address": "https://h:8443"}, Instance: "m1", Source: "/a", Destination: "a"}, Attr: "remote", Msg: "mutually exclusive"},
		{Name: "no instance", Task: &FilePull{Source: "/a", Destination: "a"}, Attr: "instance", Msg: "must not be empty"},
		{Name: "relative source", Task: &FilePull{Instance: "m1", Source: "etc/hosts", Destination: "a"}, Attr: "source", Msg: "must be an absolute path"},
		{Name: "no destination", Task: &FilePull{Instance: "m1", Source: "/a"}, Attr: "destination", Msg: "must not be empty"},
		{Name: "bad instance name", Task: &FilePull{Instance: "-m1", Source: "/a", Destination: "a"}, Attr: "instance", Msg: "must not start with a digit or hyphen"},
		{Name: "setgid mode", Task: &FilePull{Instance: "m1", Source: "/a", Destination: "a", Mode: "2750"}, Attr: "mode", Msg: "setuid, setgid and sticky bits are not supported"},
		{Name: "bad mode", Task: &FilePull{Instance: "m1", Source: "/a", Destination: "a", Mode: "rw"}, Attr: "mode", Msg: "not an octal file mode"},
	})
}

func TestFilePullType(t *testing.T) {
	taskstest.CheckType(t, filePullType(), map[string]cty.Type{"destination": cty.String, "sha256": cty.String})
	taskstest.CheckExample(t, filePullType(), exampleVars)
}

func TestFilePullFollowsSymlinkAndWritesAtomically(t *testing.T) {
	inst := launchTestInstance(t)
	inside(t, inst, "mkdir -p /etc/app && printf 'secret\\n' > /etc/app/real.conf && ln -sfn app/real.conf /etc/app.conf")
	dir := filepath.Join(t.TempDir(), "state")
	dest := filepath.Join(dir, "app.conf")
	pull := &FilePull{Instance: inst, Source: "/etc/app.conf", Destination: dest}
	out, printed := mustValidateAndRun(t, pull)
	if got := outStr(t, out, "sha256"); got != sha256Hex("secret\n") {
		t.Errorf("sha256 = %s", got)
	}
	if got := outStr(t, out, "destination"); got != dest {
		t.Errorf("destination = %q", got)
	}
	if !strings.Contains(printed, "pulled /etc/app/real.conf to "+dest+" (7 bytes)") {
		t.Errorf("output:\n%s", printed)
	}
	b, err := os.ReadFile(dest)
	fi, _ := os.Lstat(dest)
	if err != nil || string(b) != "secret\n" || fi.Mode() != 0o600 {
		t.Errorf("pulled %q (%v), mode %v; want \"secret\\n\" mode 0600", b, err, fi.Mode())
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("destination directory holds %v, want only app.conf (no temporary files)", entries)
	}
	if _, printed := mustValidateAndRun(t, pull); !strings.Contains(printed, dest+` from "`+inst+`" already present`) {
		t.Errorf("re-run output:\n%s", printed)
	}

	// A declared mode change rewrites the file.
	pull.Mode = "0644"
	mustValidateAndRun(t, pull)
	if fi, _ := os.Lstat(dest); fi.Mode() != 0o644 {
		t.Errorf("mode after change = %v", fi.Mode())
	}
}

func TestFilePullErrors(t *testing.T) {
	inst := launchTestInstance(t)
	nosuch := testName("nosuch")
	localDir := t.TempDir()
	tests := []struct {
		name    string
		pull    FilePull
		wantErr string
	}{
		{"unknown instance", FilePull{Instance: nosuch, Source: "/etc/hosts", Destination: localDir + "/h"},
			`pull "/etc/hosts" from "` + nosuch + `": instance not found`},
		{"missing source", FilePull{Instance: inst, Source: "/etc/nosuch", Destination: localDir + "/h"},
			`pull "/etc/nosuch" from "` + inst + `": /etc/nosuch does not exist`},
		{"directory without recursive", FilePull{Instance: inst, Source: "/etc", Destination: localDir + "/etc"},
			`pull "/etc" from "` + inst + `": /etc is a directory (set recursive = true to pull it)`},
		{"local destination is a directory", FilePull{Instance: inst, Source: "/etc/hosts", Destination: localDir},
			`pull "/etc/hosts" from "` + inst + `": local ` + localDir + ` is a directory`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantRunError(t, &tt.pull, tt.wantErr)
		})
	}
}

// A cancelled pull stops mid-transfer and leaves no temporary file behind.
func TestFilePullCancelled(t *testing.T) {
	inst := launchTestInstance(t)
	inside(t, inst, "dd if=/dev/zero of=/big bs=1M count=512 2>/dev/null")
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	env, _ := taskstest.NewEnv(t)
	start := time.Now()
	_, err := (&FilePull{Instance: inst, Source: "/big", Destination: filepath.Join(dir, "big")}).Run(ctx, env)
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("Run returned %v after start, want soon after the 300ms deadline", took)
	}
	if want := `pull "/big" from "` + inst + `": context deadline exceeded`; !errors.Is(err, context.DeadlineExceeded) || err.Error() != want {
		t.Errorf("Run error = %v, want %q", err, want)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("left behind: %v", entries)
	}
}
