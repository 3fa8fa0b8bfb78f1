package image

import (
	"fmt"
	"net"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/flowdev/flow/internal/ci"
	"github.com/flowdev/flow/tasks/taskstest"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// dockerRegistry is Debian's distribution 2.8 binary. Unlike the in-process
// registry, it keeps blobs per repository, as production registries do.
const dockerRegistry = "/usr/bin/docker-registry"

// startDistribution runs docker-registry with filesystem storage on a
// loopback port, behind a counting proxy; it skips the test without it, except
// under CI (internal/ci).
func startDistribution(t *testing.T) *testRegistry {
	t.Helper()
	if _, err := os.Stat(dockerRegistry); err != nil {
		// make test installs it (scripts/lab-setup.sh); under CI its absence fails.
		if ci.Enabled() {
			t.Fatalf("%s not installed: %v", dockerRegistry, err)
		}
		t.Skipf("%s not installed: %v", dockerRegistry, err)
	}
	dir := t.TempDir()
	addr := refusedAddr(t) // a free port, for the moment
	config := fmt.Sprintf("version: 0.1\nlog:\n  level: error\n  accesslog:\n    disabled: true\n"+
		"storage:\n  filesystem:\n    rootdirectory: %s\nhttp:\n  addr: %s\n", filepath.Join(dir, "data"), addr)
	cfgPath := filepath.Join(dir, "config.yml")
	if err := os.WriteFile(cfgPath, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(dockerRegistry, "serve", cfgPath)
	var logs taskstest.Buffer // it logs every 404 as an error: shown only when the test fails
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("docker-registry log:\n%s", logs.String())
		}
	})
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("docker-registry did not listen on %s", addr)
		}
	}
	upstream, _ := url.Parse("http://" + addr)
	return newCountingServer(t, httputil.NewSingleHostReverseProxy(upstream))
}

// Against a registry that keeps blobs per repository, a layer an earlier image
// of the run put into one repository is mounted into the next, not uploaded;
// a second run sends one HEAD per image and nothing else.
func TestMirrorIntoDistribution(t *testing.T) {
	dst := startDistribution(t)
	src := newTestRegistry(t)
	base := randomImage(t, 3)
	extra, err := random.Layer(1024, types.DockerLayer)
	if err != nil {
		t.Fatal(err)
	}
	derived, err := mutate.AppendLayers(base, extra)
	if err != nil {
		t.Fatal(err)
	}
	src.push(t, "lab/base:v1", base)
	src.push(t, "lab/derived:v1", derived)
	src.push(t, "lab/multi:v1", multiPlatform(t))
	refs := []string{src.host + "/lab/base:v1", src.host + "/lab/derived:v1", src.host + "/lab/multi:v1"}
	m := &Mirror{Images: listValue(refs), Registry: dst.host, Parallelism: 1} // base first

	out, _ := run(t, m)
	for _, d := range layerDigests(t, base) {
		if n := dst.uploadsOf(d.String()); n != 1 {
			t.Errorf("shared layer %s uploaded %d times, want once (then mounted)", d, n)
		}
	}
	if dst.count("POST mount") == 0 {
		t.Error("no cross-repository mount was asked for")
	}
	dst.reset()
	run(t, m)
	if n := dst.writes(); n != 0 {
		t.Errorf("second run sent %d writes, want none", n)
	}
	if n := dst.count("HEAD manifest"); n != len(refs) {
		t.Errorf("second run sent %d manifest HEADs, want %d", n, len(refs))
	}
	assertMirrored(t, src, dst, refs, outputMap(t, out))
}
