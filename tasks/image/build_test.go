package image

import (
	"archive/tar"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// writeTree creates files under dir: path -> content; a content starting with
// "#!" is made executable with perm exec, others get perm plain.
func writeTree(t *testing.T, dir string, files map[string]string, plain, exec os.FileMode) {
	t.Helper()
	for p, content := range files {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		mode := plain
		if strings.HasPrefix(content, "#!") {
			mode = exec
		}
		if err := os.WriteFile(full, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(full, mode); err != nil { // umask-proof
			t.Fatal(err)
		}
	}
}

var appFiles = map[string]string{
	"bin/agent":          "#!/bin/sh\necho agent\n",
	"conf/agent.yaml":    "level: info\n",
	"conf/extra/b.txt":   "b\n",
	"conf/extra/a.txt":   "a\n",
	"conf/zzz/deep/x.md": "x\n",
}

func appBuild(dir, tarballPath string) *Build {
	return &Build{
		Layers: []map[string]string{
			{"source": filepath.Join(dir, "bin/agent"), "destination": "/usr/local/bin/agent"},
			{"source": filepath.Join(dir, "conf"), "destination": "/etc/agent/"},
		},
		Entrypoint: []string{"/usr/local/bin/agent"},
		Tarball:    tarballPath,
		Tag:        "flow.test/agent:dev",
	}
}

func TestBuildIsReproducible(t *testing.T) {
	dirA, dirB := t.TempDir(), t.TempDir()
	writeTree(t, dirA, appFiles, 0o644, 0o755)
	writeTree(t, dirB, appFiles, 0o600, 0o700) // another umask
	old := time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)
	if err := os.Chtimes(filepath.Join(dirB, "bin/agent"), old, old); err != nil {
		t.Fatal(err)
	}
	outA, _ := run(t, appBuild(dirA, filepath.Join(t.TempDir(), "a.tar")))
	outB, _ := run(t, appBuild(dirB, filepath.Join(t.TempDir(), "b.tar")))
	if a, b := outA["digest"].AsString(), outB["digest"].AsString(); a != b {
		t.Errorf("same files, different umask and mtimes: digests %s and %s differ", a, b)
	}
	writeTree(t, dirB, map[string]string{"conf/agent.yaml": "level: debug\n"}, 0o644, 0o755)
	outC, _ := run(t, appBuild(dirB, filepath.Join(t.TempDir(), "c.tar")))
	if outC["digest"].AsString() == outA["digest"].AsString() {
		t.Error("changed content gave the same digest")
	}
}

// tarEntry is what a test checks of one layer entry.
type tarEntry struct {
	name    string
	typ     byte
	mode    int64
	content string
	link    string
}

func layerEntries(t *testing.T, l v1.Layer) []tarEntry {
	t.Helper()
	rc, err := l.Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	var out []tarEntry
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Uid != 0 || h.Gid != 0 || !h.ModTime.Equal(time.Unix(0, 0)) {
			t.Errorf("%s: owner %d:%d, mtime %v; want 0:0 at the epoch", h.Name, h.Uid, h.Gid, h.ModTime)
		}
		b, _ := io.ReadAll(tr)
		out = append(out, tarEntry{h.Name, h.Typeflag, h.Mode, string(b), h.Linkname})
	}
}

func TestBuildContentsAndPush(t *testing.T) {
	reg := newTestRegistry(t)
	dir := t.TempDir()
	writeTree(t, dir, appFiles, 0o644, 0o755)
	if err := os.Symlink("agent.yaml", filepath.Join(dir, "conf/current.yaml")); err != nil {
		t.Fatal(err)
	}
	b := appBuild(dir, "")
	b.Tag = ""
	b.Layers[0]["mode"] = "0750"
	b.Cmd = []string{"--config", "/etc/agent/agent.yaml"}
	b.Env = map[string]string{"B": "2", "A": "1"}
	b.Workdir = "/var/lib/agent"
	b.ExposedPorts = []string{"8080", "53/udp"}
	b.Labels = map[string]string{"team": "lab"}
	b.Platform = "linux/arm64"
	b.Push = reg.host + "/lab/agent:dev"

	out, _ := run(t, b)
	digest := reg.digest(t, "lab/agent:dev")
	if out["digest"].AsString() != digest.String() || out["reference"].AsString() != reg.host+"/lab/agent@"+digest.String() {
		t.Errorf("outputs %v, registry has %s", out, digest)
	}
	img, err := remote.Image(reg.ref(t, "lab/agent:dev"))
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	c := cf.Config
	wantCfg := v1.Config{
		Entrypoint: []string{"/usr/local/bin/agent"}, Cmd: b.Cmd, Env: []string{"A=1", "B=2"}, WorkingDir: "/var/lib/agent",
		ExposedPorts: map[string]struct{}{"8080/tcp": {}, "53/udp": {}}, Labels: map[string]string{"team": "lab"},
	}
	if !reflect.DeepEqual(c, wantCfg) {
		t.Errorf("config %+v\nwant   %+v", c, wantCfg)
	}
	if cf.OS != "linux" || cf.Architecture != "arm64" || !cf.Created.Time.Equal(time.Unix(0, 0)) {
		t.Errorf("config platform %s/%s created %v", cf.OS, cf.Architecture, cf.Created)
	}
	layers, err := img.Layers()
	if err != nil || len(layers) != 2 {
		t.Fatalf("layers: %d, %v; want 2", len(layers), err)
	}
	want := [][]tarEntry{
		{
			{"usr/", tar.TypeDir, 0o755, "", ""},
			{"usr/local/", tar.TypeDir, 0o755, "", ""},
			{"usr/local/bin/", tar.TypeDir, 0o755, "", ""},
			{"usr/local/bin/agent", tar.TypeReg, 0o750, appFiles["bin/agent"], ""},
		},
		{
			{"etc/", tar.TypeDir, 0o755, "", ""},
			{"etc/agent/", tar.TypeDir, 0o755, "", ""},
			{"etc/agent/conf/", tar.TypeDir, 0o755, "", ""},
			{"etc/agent/conf/agent.yaml", tar.TypeReg, 0o644, appFiles["conf/agent.yaml"], ""},
			{"etc/agent/conf/current.yaml", tar.TypeSymlink, 0o777, "", "agent.yaml"},
			{"etc/agent/conf/extra/", tar.TypeDir, 0o755, "", ""},
			{"etc/agent/conf/extra/a.txt", tar.TypeReg, 0o644, "a\n", ""},
			{"etc/agent/conf/extra/b.txt", tar.TypeReg, 0o644, "b\n", ""},
			{"etc/agent/conf/zzz/", tar.TypeDir, 0o755, "", ""},
			{"etc/agent/conf/zzz/deep/", tar.TypeDir, 0o755, "", ""},
			{"etc/agent/conf/zzz/deep/x.md", tar.TypeReg, 0o644, "x\n", ""},
		},
	}
	for i, l := range layers {
		if got := layerEntries(t, l); !reflect.DeepEqual(got, want[i]) {
			t.Errorf("layer %d:\n got %v\nwant %v", i, got, want[i])
		}
	}

	reg.reset()
	_, log := run(t, b)
	if reg.writes() != 0 || !strings.Contains(log, "already present") {
		t.Errorf("re-run sent %d writes, want none\n%s", reg.writes(), log)
	}
}

func TestBuildOnBase(t *testing.T) {
	reg := newTestRegistry(t)
	base, err := mutate.Config(randomImage(t, 2), v1.Config{Env: []string{"PATH=/bin", "KEEP=1"}, Cmd: []string{"sh"}})
	if err != nil {
		t.Fatal(err)
	}
	reg.push(t, "base/img:1", base)
	index := multiPlatform(t)
	reg.push(t, "base/multi:1", index)
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"f.txt": "f\n"}, 0o644, 0o755)
	layer := map[string]string{"source": filepath.Join(dir, "f.txt"), "destination": "/f.txt"}

	out, _ := run(t, &Build{Base: reg.host + "/base/img:1", Layers: []map[string]string{layer},
		Entrypoint: []string{"/app"}, Env: map[string]string{"PATH": "/usr/bin:/bin", "NEW": "x"}, Push: reg.host + "/app/on-base:1"})
	img, err := remote.Image(reg.ref(t, "app/on-base:1"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := layerDigests(t, img)[:2], layerDigests(t, base); !reflect.DeepEqual(got, want) {
		t.Errorf("first layers %v, want the base's %v", got, want)
	}
	cf, _ := img.ConfigFile()
	if want := []string{"PATH=/usr/bin:/bin", "KEEP=1", "NEW=x"}; !reflect.DeepEqual(cf.Config.Env, want) {
		t.Errorf("env %v, want %v", cf.Config.Env, want)
	}
	if cf.Config.Cmd != nil {
		t.Errorf("cmd %v: a new entrypoint should drop the base's cmd", cf.Config.Cmd)
	}
	if len(cf.History) != 3 {
		t.Errorf("history has %d entries, want the base's 2 and ours", len(cf.History))
	}
	if out["digest"].AsString() == "" {
		t.Error("no digest")
	}

	// From an index, the platform picks the base.
	_, _ = run(t, &Build{Base: reg.host + "/base/multi:1", Layers: []map[string]string{layer}, Platform: "linux/arm64", Push: reg.host + "/app/on-arm:1"})
	arm, err := remote.Image(reg.ref(t, "app/on-arm:1"))
	if err != nil {
		t.Fatal(err)
	}
	im, _ := index.IndexManifest()
	want, _ := index.Image(im.Manifests[1].Digest) // linux/arm64
	if got := layerDigests(t, arm)[:2]; !reflect.DeepEqual(got, layerDigests(t, want)) {
		t.Errorf("arm64 build's first layers %v, want the arm64 base's", got)
	}
}

func layerDigests(t *testing.T, img v1.Image) []v1.Hash {
	t.Helper()
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	var out []v1.Hash
	for _, l := range layers {
		d, err := l.Digest()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, d)
	}
	return out
}

func TestBuildMissingSource(t *testing.T) {
	_, _, err := tryRun(t.Context(), t, &Build{Layers: []map[string]string{{"source": "/no/such/file", "destination": "/x"}}, Tarball: filepath.Join(t.TempDir(), "x.tar"), Tag: "x:y"})
	if err == nil || !strings.Contains(err.Error(), `layer "/no/such/file"`) || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("error = %v, want it to name the missing source", err)
	}
}

// entriesOf lists a layer built by buildLayer.
func entriesOf(t *testing.T, data []byte) []tarEntry {
	t.Helper()
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil })
	if err != nil {
		t.Fatal(err)
	}
	return layerEntries(t, l)
}

// Sources given as a symbolic link or as "." or "..": the link is followed as
// COPY follows it, and neither form escapes the destination.
func TestBuildLayerSources(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"real/agent": "#!/bin/sh\n", "real/conf/a.txt": "a\n", "sub/s.txt": "s\n"}, 0o644, 0o755)
	for link, to := range map[string]string{"agent-link": "real/agent", "conf-link": "real/conf"} {
		if err := os.Symlink(to, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name        string
		chdir       string // relative to dir
		source      string // relative to dir unless chdir is set
		destination string
		want        []tarEntry
	}{
		{"link to a file", "", "agent-link", "/bin/agent", []tarEntry{
			{"bin/", tar.TypeDir, 0o755, "", ""},
			{"bin/agent", tar.TypeReg, 0o755, "#!/bin/sh\n", ""},
		}},
		{"link to a directory", "", "conf-link", "/etc/", []tarEntry{
			{"etc/", tar.TypeDir, 0o755, "", ""},
			{"etc/conf-link/", tar.TypeDir, 0o755, "", ""},
			{"etc/conf-link/a.txt", tar.TypeReg, 0o644, "a\n", ""},
		}},
		{"parent into a directory", "sub", "..", "/app/", []tarEntry{
			{"app/", tar.TypeDir, 0o755, "", ""},
			{"app/agent-link", tar.TypeSymlink, 0o777, "", "real/agent"},
			{"app/conf-link", tar.TypeSymlink, 0o777, "", "real/conf"},
			{"app/real/", tar.TypeDir, 0o755, "", ""},
			{"app/real/agent", tar.TypeReg, 0o755, "#!/bin/sh\n", ""},
			{"app/real/conf/", tar.TypeDir, 0o755, "", ""},
			{"app/real/conf/a.txt", tar.TypeReg, 0o644, "a\n", ""},
			{"app/sub/", tar.TypeDir, 0o755, "", ""},
			{"app/sub/s.txt", tar.TypeReg, 0o644, "s\n", ""},
		}},
		{"current directory into the root", "sub", ".", "/", []tarEntry{
			{"s.txt", tar.TypeReg, 0o644, "s\n", ""},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			source := filepath.Join(dir, tt.source)
			if tt.chdir != "" {
				t.Chdir(filepath.Join(dir, tt.chdir))
				source = tt.source
			}
			spec, err := parseLayerSpec(map[string]string{"source": source, "destination": tt.destination})
			if err != nil {
				t.Fatal(err)
			}
			data, err := buildLayer(t.Context(), spec)
			if err != nil {
				t.Fatal(err)
			}
			if got := entriesOf(t, data); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("entries\n got %v\nwant %v", got, tt.want)
			}
		})
	}
}
