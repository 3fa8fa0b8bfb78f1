package e2e

import (
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

const (
	mirrorImages = 30
	mirrorGroups = 3
	killAfterPut = 10                    // manifests written before the SIGKILL
	writeDelay   = 20 * time.Millisecond // per write request, so the kill lands mid-mirror
)

// registryServer is go-containerregistry's registry on a 127.0.0.1 listener. It
// records, by phase (0 = the first run, 1 = the resume), the manifest PUTs by
// path and the completed blob uploads by digest, and slows writes down.
type registryServer struct {
	host string

	mu        sync.Mutex
	phase     int
	manifests map[string][]int
	blobs     map[string][]int
}

func newRegistryServer(t *testing.T, slowWrites bool) *registryServer {
	t.Helper()
	r := &registryServer{manifests: map[string][]int{}, blobs: map[string][]int{}}
	srv := httptest.NewServer(r.handler(slowWrites))
	t.Cleanup(srv.Close)
	r.host = strings.TrimPrefix(srv.URL, "http://")
	return r
}

// handler is the registry, recording and slowing down writes.
func (r *registryServer) handler(slowWrites bool) http.Handler {
	inner := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method != http.MethodGet && req.Method != http.MethodHead {
			r.record(req)
			if slowWrites {
				time.Sleep(writeDelay)
			}
		}
		inner.ServeHTTP(w, req)
	})
}

func (r *registryServer) record(req *http.Request) {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := req.URL.Path
	switch {
	case req.Method == http.MethodPut && strings.Contains(p, "/manifests/"):
		r.manifests[p] = append(r.manifests[p], r.phase)
	case strings.Contains(p, "/blobs/uploads") && req.URL.Query().Get("digest") != "":
		d := req.URL.Query().Get("digest")
		r.blobs[d] = append(r.blobs[d], r.phase)
	}
}

func (r *registryServer) manifestsWritten() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.manifests)
}

// nextPhase starts the resume's phase.
func (r *registryServer) nextPhase() {
	r.mu.Lock()
	r.phase++
	r.mu.Unlock()
}

// writtenIn returns the manifest paths first written in phase.
func (r *registryServer) writtenIn(phase int) map[string]bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]bool{}
	for p, phases := range r.manifests {
		if phases[0] == phase {
			out[p] = true
		}
	}
	return out
}

// mirrorSetup pushes the source images and returns the groups, as the flow's
// groups variable: group name -> repository paths.
func mirrorSetup(t *testing.T, src *registryServer) map[string][]string {
	t.Helper()
	groups := map[string][]string{}
	for i := range mirrorImages {
		path := fmt.Sprintf("lab/app%02d:v1", i)
		pushRandomImage(t, src.host, path)
		g := fmt.Sprintf("g%d", i%mirrorGroups)
		groups[g] = append(groups[g], path)
	}
	return groups
}

// pushRandomImage pushes a random image of two 32 KiB layers to host/path.
func pushRandomImage(t *testing.T, host, path string) {
	t.Helper()
	img, err := random.Image(32<<10, 2)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := name.ParseReference(host + "/" + path)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, img); err != nil {
		t.Fatalf("push %s: %v", ref, err)
	}
}

// hclGroups renders groups as an HCL object for --var.
func hclGroups(groups map[string][]string) string {
	var parts []string
	for g, paths := range groups {
		quoted := make([]string, len(paths))
		for i, p := range paths {
			quoted[i] = fmt.Sprintf("%q", p)
		}
		parts = append(parts, fmt.Sprintf("%s = [%s]", g, strings.Join(quoted, ", ")))
	}
	sort.Strings(parts)
	return "{ " + strings.Join(parts, ", ") + " }"
}

func digestAt(t *testing.T, host, path string) string {
	t.Helper()
	d, err := headDigest(host, path)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// headDigest is the digest the registry at host answers a HEAD of path with.
func headDigest(host, path string) (string, error) {
	ref, err := name.ParseReference(host + "/" + path)
	if err != nil {
		return "", err
	}
	desc, err := remote.Head(ref)
	if err != nil {
		return "", fmt.Errorf("head %s: %w", ref, err)
	}
	return desc.Digest.String(), nil
}

// TestMirrorKillAndResume SIGKILLs a flow mirroring 30 images once a third of
// them are written, resumes it, and checks that every image arrives with the
// source's digest and that nothing the target already held was copied again.
func TestMirrorKillAndResume(t *testing.T) {
	binary(t)
	src, dst := newRegistryServer(t, false), newRegistryServer(t, true)
	groups := mirrorSetup(t, src)
	dir := t.TempDir()
	state := filepath.Join(dir, "state.db")
	tag := newTag(t)
	vars := []string{"--var", "source=" + src.host, "--var", "target=" + dst.host, "--var", "groups=" + hclGroups(groups)}

	p := start(t, tag, dir, append([]string{"run", testdata(t, "mirror.hcl"), "--state", state}, vars...)...)
	for deadline := time.Now().Add(60 * time.Second); dst.manifestsWritten() < killAfterPut; time.Sleep(2 * time.Millisecond) {
		if p.exited() || time.Now().After(deadline) {
			t.Fatalf("flow wrote %d manifests before it ended or 60s passed\n%s", dst.manifestsWritten(), p.describe())
		}
	}
	p.killGroup()
	<-p.done
	if !p.signaled() {
		t.Fatalf("flow ended before the SIGKILL\n%s", p.describe())
	}
	killed := status(t, tag, dir, state)
	dst.nextPhase()
	before := dst.writtenIn(0)
	if killed.Status != "interrupted" || len(before) >= mirrorImages {
		t.Fatalf("after the kill: run %s with %d of %d images written; want an interrupted run part way", killed.Status, len(before), mirrorImages)
	}
	t.Logf("killed after %d of %d images were written", len(before), mirrorImages)

	r := runFlow(t, tag, dir, 120*time.Second, append([]string{"resume", "--state", state}, vars...)...)
	if r.code != 0 {
		t.Fatalf("resume exited %d\n%s", r.code, r.desc)
	}
	final := status(t, tag, dir, state)
	if final.Status != "succeeded" || final.RunID != killed.RunID {
		t.Errorf("final status: run %d %s, want run %d succeeded", final.RunID, final.Status, killed.RunID)
	}

	for _, paths := range groups {
		for _, path := range paths {
			if got, want := digestAt(t, dst.host, path), digestAt(t, src.host, path); got != want {
				t.Errorf("%s: target digest %s, want %s", path, got, want)
			}
		}
	}
	dst.mu.Lock()
	defer dst.mu.Unlock()
	if len(dst.manifests) != mirrorImages {
		t.Errorf("%d manifests written, want %d", len(dst.manifests), mirrorImages)
	}
	for p, phases := range dst.manifests {
		if len(phases) != 1 {
			t.Errorf("manifest %s written %d times (phases %v), want once", p, len(phases), phases)
		}
	}
	for d, phases := range dst.blobs {
		if len(phases) != 1 {
			t.Errorf("blob %s uploaded %d times (phases %v), want once", d, len(phases), phases)
		}
	}
	if want := mirrorImages * 3; len(dst.blobs) != want { // 2 layers and a config each
		t.Errorf("%d distinct blobs uploaded, want %d", len(dst.blobs), want)
	}
	assertSkippedOnResume(t, killed, groups, before, r.stdout, dst.host)
}

// assertSkippedOnResume checks that the instances the kill interrupted reported
// each image written before the kill as already present when they ran again.
func assertSkippedOnResume(t *testing.T, killed statusDoc, groups map[string][]string, before map[string]bool, stdout, target string) {
	t.Helper()
	byAddr := killed.byAddress()
	rerun := 0
	for g, paths := range groups {
		if byAddr[fmt.Sprintf("image_mirror.group[%q]", g)].Status == "succeeded" {
			continue
		}
		for _, path := range paths {
			repo, tagName, _ := strings.Cut(path, ":")
			if !before["/v2/"+repo+"/manifests/"+tagName] {
				continue
			}
			rerun++
			if !strings.Contains(stdout, "-> "+target+"/"+repo+"@sha256:") || !strings.Contains(stdout, path+" -> "+target+"/"+repo+"@") {
				t.Errorf("resume did not report %s", path)
			}
			line := stdout[strings.Index(stdout, path+" -> "):]
			if line, _, _ = strings.Cut(line, "\n"); !strings.HasSuffix(line, ": already present") {
				t.Errorf("resume on %s: %q, want already present", path, line)
			}
		}
	}
	t.Logf("%d images written before the kill were found present on resume", rerun)
}
