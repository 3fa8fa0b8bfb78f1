package image

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// loadTarball reads the image named tag (or the only image) from a docker archive.
func loadTarball(t *testing.T, path, tag string) v1.Image {
	t.Helper()
	var tp *name.Tag
	if tag != "" {
		tg, err := name.NewTag(tag)
		if err != nil {
			t.Fatal(err)
		}
		tp = &tg
	}
	img, err := tarball.ImageFromPath(path, tp)
	if err != nil {
		t.Fatalf("load %s (%s): %v", path, tag, err)
	}
	return img
}

func TestExport(t *testing.T) {
	reg := newTestRegistry(t)
	digest := reg.push(t, "lab/app:v1", randomImage(t, 3))
	index := multiPlatform(t)
	reg.push(t, "lab/multi:v1", index)
	im, _ := index.IndexManifest()
	armDigest := im.Manifests[2].Digest // linux/arm/v7

	tests := []struct {
		name, image, platform string
		tag                   string // name in the tarball, "" for none
		want                  v1.Hash
	}{
		{"tag", reg.host + "/lab/app:v1", "", reg.host + "/lab/app:v1", digest},
		{"tag and digest", reg.host + "/lab/app:v1@" + digest.String(), "", reg.host + "/lab/app:v1", digest},
		{"digest only", reg.host + "/lab/app@" + digest.String(), "", "", digest},
		{"index", reg.host + "/lab/multi:v1", "linux/arm/v7", reg.host + "/lab/multi:v1", armDigest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "sub", "app.tar")
			e := &Export{Image: tt.image, Path: path, Platform: tt.platform}
			out, _ := run(t, e)
			if out["digest"].AsString() != tt.want.String() || out["path"].AsString() != path {
				t.Errorf("outputs %v, want digest %s and path %s", out, tt.want, path)
			}
			// A docker archive keeps no manifest; go-containerregistry rebuilds the
			// same one for images it pushed itself, so the digest round-trips.
			img := loadTarball(t, path, tt.tag)
			if got, err := img.Digest(); err != nil || got != tt.want {
				t.Errorf("tarball image digest %v (%v), want %v", got, err, tt.want)
			}
			fi, err := os.Stat(path)
			if err != nil || fi.Mode().Perm() != 0o644 {
				t.Errorf("tarball mode %v (%v), want 0644", fi.Mode(), err)
			}
			entries, _ := os.ReadDir(filepath.Dir(path))
			if len(entries) != 1 {
				t.Errorf("directory holds %d files, want only the tarball (no temporaries)", len(entries))
			}

			reg.reset()
			_, log := run(t, e)
			if !strings.Contains(log, "already present") || reg.count("GET blob") > 1 {
				t.Errorf("re-run fetched %d blobs, want only the config\n%s", reg.count("GET blob"), log)
			}
			fi2, _ := os.Stat(path)
			if !fi2.ModTime().Equal(fi.ModTime()) {
				t.Error("re-run rewrote the tarball")
			}
		})
	}
}

func TestExportReplacesOtherImage(t *testing.T) {
	reg := newTestRegistry(t)
	first := reg.push(t, "lab/app:v1", randomImage(t, 1))
	path := filepath.Join(t.TempDir(), "app.tar")
	e := &Export{Image: reg.host + "/lab/app:v1", Path: path}
	run(t, e)
	second := reg.push(t, "lab/app:v1", randomImage(t, 1))
	out, log := run(t, e)
	if first == second || out["digest"].AsString() != second.String() || strings.Contains(log, "already present") {
		t.Fatalf("a moved tag was not exported again: %v\n%s", out, log)
	}
	if got, _ := loadTarball(t, path, reg.host+"/lab/app:v1").Digest(); got != second {
		t.Errorf("tarball holds %v, want %v", got, second)
	}
}

func TestExportErrors(t *testing.T) {
	reg := newTestRegistry(t)
	reg.push(t, "lab/multi:v1", multiPlatform(t))
	refused := refusedAddr(t)
	tests := []struct{ image, platform, want string }{
		{reg.host + "/lab/none:v1", "", fmt.Sprintf(`export %q: registry %q: not found`, reg.host+"/lab/none:v1", reg.host)},
		{refused + "/lab/app:v1", "", fmt.Sprintf(`export %q: registry %q: connection refused`, refused+"/lab/app:v1", refused)},
		{reg.host + "/lab/multi:v1", "windows/amd64", "no manifest for windows/amd64 (the index has linux/amd64, linux/arm64, linux/arm/v7)"},
	}
	for _, tt := range tests {
		path := filepath.Join(t.TempDir(), "x.tar")
		_, _, err := tryRun(t.Context(), t, &Export{Image: tt.image, Path: path, Platform: tt.platform})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("export %s: error %v\nwant it to contain %q", tt.image, err, tt.want)
		}
		if _, err := os.Stat(path); !os.IsNotExist(err) {
			t.Errorf("export %s: a failed export left %s", tt.image, path)
		}
	}
}

// A run killed while writing leaves its temporary file behind; the next write
// of the same tarball removes it, so kills do not pile up hidden copies.
func TestExportRemovesTemporaryOfKilledRun(t *testing.T) {
	reg := newTestRegistry(t)
	reg.push(t, "lab/app:v1", randomImage(t, 1))
	dir := t.TempDir()
	path := filepath.Join(dir, "app.tar")
	stale := filepath.Join(dir, ".app.tar.tmp-123456")
	other := filepath.Join(dir, ".other.tar.tmp-123456") // another tarball's: not ours to remove
	for _, f := range []string{stale, other} {
		if err := os.WriteFile(f, []byte("half a tarball"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	run(t, &Export{Image: reg.host + "/lab/app:v1", Path: path})
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("the killed run's temporary %s is still there (%v)", stale, err)
	}
	if _, err := os.Stat(other); err != nil {
		t.Errorf("another tarball's temporary was removed: %v", err)
	}
	loadTarball(t, path, reg.host+"/lab/app:v1")
}
