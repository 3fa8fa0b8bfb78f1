package lxd

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flowdev/flow/tasks"
	"github.com/flowdev/flow/tasks/taskstest"
)

// validateAndRun validates and runs task the way the engine does, with a generous
// deadline, and returns its outputs, everything it printed and its error.
func validateAndRun(t *testing.T, task tasks.Task) (tasks.Outputs, string, error) {
	t.Helper()
	if err := task.Validate(); err != nil {
		t.Fatalf("Validate() = %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	env, printed := taskstest.NewEnv(t)
	out, err := task.Run(ctx, env)
	return out, printed.String(), err
}

// mustValidateAndRun is validateAndRun for steps that must succeed.
func mustValidateAndRun(t *testing.T, task tasks.Task) (tasks.Outputs, string) {
	t.Helper()
	out, printed, err := validateAndRun(t, task)
	if err != nil {
		t.Fatalf("Run() = %v\noutput:\n%s", err, printed)
	}
	return out, printed
}

func deleteProfileAtCleanup(t *testing.T, name string) {
	t.Cleanup(func() { _ = exec.Command("lxc", "profile", "delete", name).Run() })
}

func deleteImageAtCleanup(t *testing.T, fingerprint string) {
	t.Cleanup(func() { _ = exec.Command("lxc", "image", "delete", fingerprint).Run() })
}

// testImageFiles writes a tiny image that no other test shares, because its
// metadata names it: unified (one tarball) or split (metadata and rootfs
// tarballs). It returns the paths; the image is never launched.
func testImageFiles(t *testing.T, name string, split bool) []string {
	t.Helper()
	dir := t.TempDir()
	meta := []tarEntry{{name: "metadata.yaml", body: "architecture: x86_64\ncreation_date: 1700000000\nproperties:\n  description: " + name + "\n"}}
	rootfs := []tarEntry{{name: "etc/", dir: true}, {name: "etc/flow-test", body: name + "\n"}}
	if !split {
		entries := append(meta, tarEntry{name: "rootfs/", dir: true})
		for _, e := range rootfs {
			entries = append(entries, tarEntry{name: "rootfs/" + e.name, body: e.body, dir: e.dir})
		}
		return []string{writeTarGz(t, filepath.Join(dir, name+".tar.gz"), entries)}
	}
	return []string{
		writeTarGz(t, filepath.Join(dir, name+".meta.tar.gz"), meta),
		writeTarGz(t, filepath.Join(dir, name+".rootfs.tar.gz"), rootfs),
	}
}

type tarEntry struct {
	name, body string
	dir        bool
}

func writeTarGz(t *testing.T, path string, entries []tarEntry) string {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, e := range entries {
		hdr := &tar.Header{Name: e.name, Mode: 0o644, Size: int64(len(e.body)), Typeflag: tar.TypeReg, ModTime: time.Unix(1700000000, 0)}
		if e.dir {
			hdr.Mode, hdr.Size, hdr.Typeflag = 0o755, 0, tar.TypeDir
		}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(e.body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// sha256Files hashes the files one after the other.
func sha256Files(t *testing.T, paths ...string) string {
	t.Helper()
	h := sha256.New()
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// imageFingerprint asks the lxc CLI which image an alias points at.
func imageFingerprint(t *testing.T, alias string) string {
	t.Helper()
	for _, line := range strings.Split(lxc(t, "image", "info", alias), "\n") {
		if fp, ok := strings.CutPrefix(line, "Fingerprint: "); ok {
			return strings.TrimSpace(fp)
		}
	}
	t.Fatalf("lxc image info %s shows no fingerprint", alias)
	return ""
}

// lxcGet reads one key of an object with `lxc ... get`.
func lxcGet(t *testing.T, args ...string) string {
	t.Helper()
	return strings.TrimSpace(lxc(t, args...))
}

func wantContains(t *testing.T, what, got string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(got, w) {
			t.Errorf("%s does not contain %q:\n%s", what, w, got)
		}
	}
}

// wantRunError runs task and wants exactly the error wantErr and no outputs.
func wantRunError(t *testing.T, task tasks.Task, wantErr string) {
	t.Helper()
	out, _, err := validateAndRun(t, task)
	if err == nil || err.Error() != wantErr {
		t.Errorf("Run error = %v\nwant %s", err, wantErr)
	}
	if out != nil {
		t.Errorf("outputs = %v, want none", out)
	}
}
