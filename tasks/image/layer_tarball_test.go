package image

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// rootfsEntries is a small root file system with what a package manager
// leaves and image_build's own layers never make: other owners, setuid,
// links absolute and relative, a hard link, a device node, real times.
func rootfsEntries() []*tar.Header {
	when := time.Date(2026, 11, 24, 9, 55, 0, 0, time.UTC)
	return []*tar.Header{
		{Typeflag: tar.TypeDir, Name: "./", Mode: 0o755, ModTime: when},
		{Typeflag: tar.TypeSymlink, Name: "./bin", Linkname: "usr/bin", Mode: 0o777, ModTime: when},
		{Typeflag: tar.TypeChar, Name: "./dev/null", Mode: 0o666, Devmajor: 1, Devminor: 3, ModTime: when},
		{Typeflag: tar.TypeDir, Name: "./tmp/", Mode: 0o1777, ModTime: when},
		{Typeflag: tar.TypeReg, Name: "./usr/bin/su", Mode: 0o4755, Size: 3, ModTime: when},
		{Typeflag: tar.TypeLink, Name: "./usr/bin/su-again", Linkname: "./usr/bin/su", ModTime: when},
		{Typeflag: tar.TypeSymlink, Name: "./usr/sbin/nologin", Linkname: "/usr/bin/su", Mode: 0o777, ModTime: when},
		{Typeflag: tar.TypeReg, Name: "./var/log/app.log", Mode: 0o640, Uid: 100, Gid: 4, Uname: "app", Gname: "adm", Size: 3, ModTime: when},
	}
}

// writeRootfs writes rootfsEntries as a tar, gzipped when zip is set, and
// returns the uncompressed tar's bytes.
func writeRootfs(t *testing.T, path string, zip bool) []byte {
	t.Helper()
	var raw bytes.Buffer
	tw := tar.NewWriter(&raw)
	for _, h := range rootfsEntries() {
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Size > 0 {
			if _, err := tw.Write([]byte("x\n\n")); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	data := raw.Bytes()
	if zip {
		var gz bytes.Buffer
		zw := gzip.NewWriter(&gz)
		if _, err := zw.Write(raw.Bytes()); err != nil {
			t.Fatal(err)
		}
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
		data = gz.Bytes()
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return raw.Bytes()
}

// A tarball layer reaches the registry as the archive is, headers and all,
// plain or gzipped, with a digest that depends only on the file.
func TestBuildTarballLayer(t *testing.T) {
	for _, zip := range []bool{false, true} {
		t.Run(map[bool]string{false: "tar", true: "tar.gz"}[zip], func(t *testing.T) {
			reg := newTestRegistry(t)
			dirA, dirB := t.TempDir(), t.TempDir()
			want := writeRootfs(t, filepath.Join(dirA, "rootfs.tar"), zip)
			writeRootfs(t, filepath.Join(dirB, "rootfs.tar"), zip)
			writeTree(t, dirA, map[string]string{"app": "#!/bin/sh\n"}, 0o644, 0o755)
			build := func(dir, repo string) *Build {
				return &Build{
					Layers: []map[string]string{
						{"tarball": filepath.Join(dir, "rootfs.tar")},
						{"source": filepath.Join(dirA, "app"), "destination": "/usr/local/bin/app"},
					},
					Entrypoint: []string{"/usr/local/bin/app"},
					Push:       reg.host + "/" + repo + ":1",
				}
			}
			outA, _ := run(t, build(dirA, "lab/a"))
			outB, _ := run(t, build(dirB, "lab/b"))
			if a, b := outA["digest"].AsString(), outB["digest"].AsString(); a != b {
				t.Errorf("the same archive in two places gave digests %s and %s", a, b)
			}
			img, err := remote.Image(reg.ref(t, "lab/a:1"))
			if err != nil {
				t.Fatal(err)
			}
			layers, err := img.Layers()
			if err != nil || len(layers) != 2 {
				t.Fatalf("layers: %d, %v; want 2", len(layers), err)
			}
			rc, err := layers[0].Uncompressed()
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(rc)
			rc.Close()
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("layer differs from the archive (%d bytes, want %d)", len(got), len(want))
			}
			var headers []*tar.Header
			tr := tar.NewReader(bytes.NewReader(got))
			for h, err := tr.Next(); err == nil; h, err = tr.Next() {
				headers = append(headers, &tar.Header{Typeflag: h.Typeflag, Name: h.Name, Linkname: h.Linkname, Mode: h.Mode,
					Uid: h.Uid, Gid: h.Gid, Uname: h.Uname, Gname: h.Gname, Size: h.Size, Devmajor: h.Devmajor, Devminor: h.Devminor, ModTime: h.ModTime.UTC()})
			}
			if wantH := rootfsEntries(); !reflect.DeepEqual(headers, wantH) {
				t.Errorf("headers in the image:\n%v\nwant\n%v", headers, wantH)
			}
			if got := layerEntries(t, layers[1]); len(got) == 0 || got[len(got)-1].name != "usr/local/bin/app" {
				t.Errorf("second layer %v, want the app", got)
			}

			reg.reset()
			_, log := run(t, build(dirA, "lab/a"))
			if reg.writes() != 0 || !strings.Contains(log, "already present") {
				t.Errorf("re-run sent %d writes, want none\n%s", reg.writes(), log)
			}
		})
	}
}

func TestBuildTarballLayerErrors(t *testing.T) {
	dir := t.TempDir()
	notTar := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(notTar, bytes.Repeat([]byte("not a tar\n"), 100), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct{ name, path, msg string }{
		{"missing", filepath.Join(dir, "none.tar"), "no such file"},
		{"not a tar", notTar, "not a tar or gzipped tar archive"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := tryRun(t.Context(), t, &Build{Layers: []map[string]string{{"tarball": tt.path}}, Tarball: filepath.Join(dir, "out.tar"), Tag: "x:y"})
			if err == nil || !strings.Contains(err.Error(), `layer tarball "`+tt.path+`"`) || !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("error = %v, want it to name %s and say %q", err, tt.path, tt.msg)
			}
		})
	}
}
