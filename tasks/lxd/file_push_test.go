package lxd

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flowdev/flow/tasks/taskstest"
	"github.com/zclconf/go-cty/cty"
)

func TestFilePushValidate(t *testing.T) {
	text := "hi"
	empty := ""
	taskstest.CheckValidate(t, []taskstest.ValidateCase{
		{Name: "source", Task: &FilePush{Instance: "m1", Source: "app.tar", Destination: "/opt/app.tar"}},
		{Name: "empty content", Task: &FilePush{Instance: "m1", Content: &empty, Destination: "/etc/x", Mode: "0600", UID: 1, GID: 2, CreateDirs: true}},
		{Name: "bad remote", Task: &FilePush{Remote: map[string]string{"address": "http://x"}, Instance: "m1", Source: "a", Destination: "/a"}, Attr: "remote", Msg: "must start with https://"},
		{Name: "no instance", Task: &FilePush{Source: "a", Destination: "/a"}, Attr: "instance", Msg: "must not be empty"},
		{Name: "neither", Task: &FilePush{Instance: "m1", Destination: "/a"}, Attr: "source", Msg: "one of source or content is required"},
		{Name: "both", Task: &FilePush{Instance: "m1", Source: "a", Content: &text, Destination: "/a"}, Attr: "content", Msg: "mutually exclusive"},
		{Name: "no destination", Task: &FilePush{Instance: "m1", Source: "a"}, Attr: "destination", Msg: "must not be empty"},
		{Name: "relative destination", Task: &FilePush{Instance: "m1", Source: "a", Destination: "opt/a"}, Attr: "destination", Msg: "must be an absolute path"},
		{Name: "root destination", Task: &FilePush{Instance: "m1", Source: "a", Destination: "/."}, Attr: "destination", Msg: `must not be "/"`},
		{Name: "decimal mode", Task: &FilePush{Instance: "m1", Source: "a", Destination: "/a", Mode: "644x"}, Attr: "mode", Msg: "not an octal file mode"},
		{Name: "mode too big", Task: &FilePush{Instance: "m1", Source: "a", Destination: "/a", Mode: "17777"}, Attr: "mode", Msg: "not an octal file mode"},
		{Name: "setuid mode", Task: &FilePush{Instance: "m1", Source: "a", Destination: "/a", Mode: "4755"}, Attr: "mode", Msg: "setuid, setgid and sticky bits are not supported"},
		{Name: "bad instance name", Task: &FilePush{Instance: "m.1", Source: "a", Destination: "/a"}, Attr: "instance", Msg: "only letters, digits and hyphens"},
		{Name: "negative uid", Task: &FilePush{Instance: "m1", Source: "a", Destination: "/a", UID: -1}, Attr: "uid", Msg: "not a valid numeric ID"},
	})
}

func TestFilePushType(t *testing.T) {
	taskstest.CheckType(t, filePushType(), map[string]cty.Type{"destination": cty.String, "files": cty.Number, "sha256": cty.String})
	taskstest.CheckExample(t, filePushType(), exampleVars)
}

// writeTree creates files (by slash path; a value starting with "-> " makes a
// symlink) below a new temporary directory and returns it.
func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for rel, body := range files {
		p := filepath.Join(root, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		var err error
		switch {
		case strings.HasSuffix(rel, "/"):
			err = os.MkdirAll(p, 0o755)
		case strings.HasPrefix(body, "-> "):
			err = os.Symlink(strings.TrimPrefix(body, "-> "), p)
		default:
			err = os.WriteFile(p, []byte(body), 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func sha256Hex(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// statInside returns "MODE UID GID" of each path (stat -c), one line each.
func statInside(t *testing.T, inst string, paths ...string) string {
	t.Helper()
	return inside(t, inst, "stat -c '%a %u %g %F' "+strings.Join(paths, " "))
}

func TestFilePushTreeThenPullRoundTrip(t *testing.T) {
	inst := launchTestInstance(t)
	files := map[string]string{
		"a.txt":          "alpha\n",
		"sub/b.bin":      "bravo\x00\xff",
		"sub/deep/c.txt": "",
		"link":           "-> a.txt",
		"sub/up":         "-> ../a.txt",
		"abs":            "-> /etc/hosts",
		"empty/":         "",
	}
	local := writeTree(t, files)
	// The digest is what sha256sum prints for the sorted files, hashed.
	// A symlink counts as its target.
	wantSum := sha256Hex(sha256Hex("alpha\n") + "  a.txt\n" +
		sha256Hex("/etc/hosts") + "  abs\n" +
		sha256Hex("a.txt") + "  link\n" +
		sha256Hex("bravo\x00\xff") + "  sub/b.bin\n" +
		sha256Hex("") + "  sub/deep/c.txt\n" +
		sha256Hex("../a.txt") + "  sub/up\n")
	push := &FilePush{Instance: inst, Source: local, Destination: "/srv/app/current/", Mode: "0640", UID: 1000, GID: 1001, CreateDirs: true}

	out, printed := mustValidateAndRun(t, push)
	if got := outStr(t, out, "destination"); got != "/srv/app/current" {
		t.Errorf("destination = %q", got)
	}
	if got := outNum(t, out, "files"); got != 6 {
		t.Errorf("files = %d, want 6", got)
	}
	if got := outStr(t, out, "sha256"); got != wantSum {
		t.Errorf("sha256 = %s, want %s", got, wantSum)
	}
	for _, want := range []string{"created directory /srv/app\n", "pushed /srv/app/current/sub/b.bin (7 bytes)", "linked /srv/app/current/link -> a.txt"} {
		if !strings.Contains(printed, want) {
			t.Errorf("output lacks %q:\n%s", want, printed)
		}
	}
	d := "/srv/app/current/"
	gotStat := statInside(t, inst, "/srv/app", d, d+"a.txt", d+"sub", d+"sub/b.bin", d+"sub/deep/c.txt", d+"empty", d+"link")
	wantStat := strings.Join([]string{
		"755 0 0 directory",
		"755 1000 1001 directory",
		"640 1000 1001 regular file",
		"755 1000 1001 directory",
		"640 1000 1001 regular file",
		"640 1000 1001 regular empty file",
		"755 1000 1001 directory",
		"777 0 0 symbolic link", // LXD 5.0 ignores a symlink's owner
	}, "\n")
	if gotStat != wantStat {
		t.Errorf("inside:\n%s\nwant:\n%s", gotStat, wantStat)
	}
	if got := inside(t, inst, "for l in link sub/up abs; do readlink "+d+"$l; done; cat "+d+"sub/up"); got != "a.txt\n../a.txt\n/etc/hosts\nalpha" {
		t.Errorf("link: %q", got)
	}

	// Unchanged: nothing is written.
	out2, printed := mustValidateAndRun(t, push)
	if !strings.Contains(printed, `/srv/app/current on "`+inst+`" already present`) || strings.Contains(printed, "pushed") {
		t.Errorf("re-run output:\n%s", printed)
	}
	if outStr(t, out2, "sha256") != wantSum || outNum(t, out2, "files") != 6 {
		t.Errorf("re-run outputs differ: %v", out2)
	}

	// One changed file: only it is written.
	if err := os.WriteFile(filepath.Join(local, "sub", "b.bin"), []byte("changed"), 0o644); err != nil {
		t.Fatal(err)
	}
	out3, printed := mustValidateAndRun(t, push)
	if strings.Count(printed, "pushed") != 1 || !strings.Contains(printed, "pushed /srv/app/current/sub/b.bin (7 bytes)") {
		t.Errorf("after a change, output:\n%s", printed)
	}
	if got := inside(t, inst, "cat "+d+"sub/b.bin"); got != "changed" {
		t.Errorf("b.bin inside = %q", got)
	}

	// Pull it back: the same digest, the same bytes, the declared local modes.
	dest := filepath.Join(t.TempDir(), "copy")
	pull := &FilePull{Instance: inst, Source: "/srv/app/current", Destination: dest, Recursive: true}
	pout, _ := mustValidateAndRun(t, pull)
	if got, want := outStr(t, pout, "sha256"), outStr(t, out3, "sha256"); got != want {
		t.Errorf("pull sha256 = %s, push sha256 = %s", got, want)
	}
	files["sub/b.bin"] = "changed"
	for rel, body := range files {
		p := filepath.Join(dest, filepath.FromSlash(rel))
		fi, err := os.Lstat(p)
		switch {
		case err != nil:
			t.Errorf("pulled %s: %v", rel, err)
		case strings.HasSuffix(rel, "/"):
			if !fi.IsDir() || fi.Mode().Perm() != 0o700 {
				t.Errorf("pulled %s: mode %v, want a 0700 directory", rel, fi.Mode())
			}
		case strings.HasPrefix(body, "-> "):
			if target, _ := os.Readlink(p); target != strings.TrimPrefix(body, "-> ") {
				t.Errorf("pulled %s -> %q, want %s", rel, target, body)
			}
		default:
			b, _ := os.ReadFile(p)
			if string(b) != body || fi.Mode().Perm() != 0o600 {
				t.Errorf("pulled %s: %q mode %v, want %q mode 0600", rel, b, fi.Mode().Perm(), body)
			}
		}
	}
	_, printed = mustValidateAndRun(t, pull)
	if !strings.Contains(printed, "already present") || strings.Contains(printed, "pulled") {
		t.Errorf("pull re-run output:\n%s", printed)
	}
}

func TestFilePushContentModeAndOwnerChanges(t *testing.T) {
	inst := launchTestInstance(t)
	text := "key = value\n"
	push := &FilePush{Instance: inst, Content: &text, Destination: "/etc/flow.conf", Mode: "0600"}
	out, _ := mustValidateAndRun(t, push)
	if got := outStr(t, out, "sha256"); got != sha256Hex(text) || outNum(t, out, "files") != 1 {
		t.Errorf("outputs = %v, want sha256 %s and 1 file", out, sha256Hex(text))
	}
	if got := statInside(t, inst, "/etc/flow.conf"); got != "600 0 0 regular file" {
		t.Errorf("stat = %q", got)
	}
	if _, printed := mustValidateAndRun(t, push); !strings.Contains(printed, "already present") {
		t.Errorf("re-run output:\n%s", printed)
	}
	// LXD keeps the mode of a file it overwrites; the task must not.
	push.Mode, push.UID, push.GID = "0644", 7, 8
	if _, printed := mustValidateAndRun(t, push); !strings.Contains(printed, "pushed /etc/flow.conf") {
		t.Errorf("mode change output:\n%s", printed)
	}
	if got := statInside(t, inst, "/etc/flow.conf"); got != "644 7 8 regular file" {
		t.Errorf("stat after mode change = %q", got)
	}
	changed := "key = other\n"
	push.Content = &changed
	mustValidateAndRun(t, push)
	if got := inside(t, inst, "cat /etc/flow.conf"); got != "key = other" {
		t.Errorf("content = %q", got)
	}
	if got := statInside(t, inst, "/etc/flow.conf"); got != "644 7 8 regular file" {
		t.Errorf("stat after content change = %q", got)
	}
}

// Without mode, a file keeps its local permission bits.
func TestFilePushKeepsLocalMode(t *testing.T) {
	inst := launchTestInstance(t)
	script := filepath.Join(t.TempDir(), "run.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho ran\n"), 0o750); err != nil {
		t.Fatal(err)
	}
	mustValidateAndRun(t, &FilePush{Instance: inst, Source: script, Destination: "/usr/bin/run.sh"})
	if got := statInside(t, inst, "/usr/bin/run.sh"); got != "750 0 0 regular file" {
		t.Errorf("stat = %q", got)
	}
	if got := inside(t, inst, "run.sh"); got != "ran" {
		t.Errorf("run.sh printed %q", got)
	}
}

func TestFilePushErrors(t *testing.T) {
	inst := launchTestInstance(t)
	local := writeTree(t, map[string]string{"f": "x"})
	missing := filepath.Join(local, "missing")
	nosuch := testName("nosuch")
	tests := []struct {
		name    string
		push    FilePush
		wantErr string
	}{
		{"unknown instance", FilePush{Instance: nosuch, Source: local + "/f", Destination: "/f"},
			`push "` + local + `/f" to "` + nosuch + `": instance not found`},
		{"missing local source", FilePush{Instance: inst, Source: missing, Destination: "/f"},
			`push "` + missing + `" to "` + inst + `": local source ` + missing + ` does not exist`},
		{"missing parent", FilePush{Instance: inst, Source: local + "/f", Destination: "/opt/a/f"},
			`push "` + local + `/f" to "` + inst + `": parent directory /opt/a does not exist (set create_dirs = true to create it)`},
		{"parent is a file", FilePush{Instance: inst, Source: local + "/f", Destination: "/etc/passwd/f"},
			`push "` + local + `/f" to "` + inst + `": parent /etc/passwd is a file, not a directory`},
		{"destination is a directory", FilePush{Instance: inst, Source: local + "/f", Destination: "/etc"},
			`push "` + local + `/f" to "` + inst + `": /etc is a directory`},
		{"tree onto a file", FilePush{Instance: inst, Source: local, Destination: "/etc/passwd"},
			`push "` + local + `" to "` + inst + `": /etc/passwd exists and is a file, not a directory`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantRunError(t, &tt.push, tt.wantErr)
		})
	}
}

// A cancelled push stops mid-transfer and says why.
func TestFilePushCancelled(t *testing.T) {
	inst := launchTestInstance(t)
	big := filepath.Join(t.TempDir(), "big")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 1<<20)
	for range 256 {
		f.Write(chunk)
	}
	f.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	env, _ := taskstest.NewEnv(t)
	start := time.Now()
	_, err = (&FilePush{Instance: inst, Source: big, Destination: "/big"}).Run(ctx, env)
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("Run returned %v after start, want soon after the 300ms deadline", took)
	}
	if want := `push "` + big + `" to "` + inst + `": context deadline exceeded`; !errors.Is(err, context.DeadlineExceeded) || err.Error() != want {
		t.Errorf("Run error = %v, want %q", err, want)
	}
}
