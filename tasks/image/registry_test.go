package image

import (
	"context"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/flowdev/flow/tasks"
	"github.com/flowdev/flow/tasks/taskstest"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// testRegistry is go-containerregistry's registry on a 127.0.0.1 listener,
// behind a handler that counts requests by method and kind of path.
type testRegistry struct {
	host string // 127.0.0.1:PORT

	mu      sync.Mutex
	counts  map[string]int // "HEAD manifest", "PUT upload", "GET blob", "GET ping", ...
	heads   map[string]int // manifest HEADs by path
	uploads map[string]int // completed blob uploads by digest
}

func newTestRegistry(t *testing.T) *testRegistry {
	t.Helper()
	return newCountingServer(t, registry.New(registry.Logger(log.New(io.Discard, "", 0))))
}

// newCountingServer serves inner on 127.0.0.1, counting its requests.
func newCountingServer(t *testing.T, inner http.Handler) *testRegistry {
	t.Helper()
	r := &testRegistry{}
	r.reset()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.record(req)
		inner.ServeHTTP(w, req)
	}))
	t.Cleanup(srv.Close)
	r.host = strings.TrimPrefix(srv.URL, "http://")
	return r
}

// pathKind classifies a registry API path.
func pathKind(p string) string {
	switch {
	case p == "/v2/" || p == "/v2":
		return "ping"
	case strings.Contains(p, "/manifests/"):
		return "manifest"
	case strings.Contains(p, "/blobs/uploads"):
		return "upload"
	case strings.Contains(p, "/blobs/"):
		return "blob"
	}
	return "other"
}

func (r *testRegistry) record(req *http.Request) {
	r.mu.Lock()
	defer r.mu.Unlock()
	kind := pathKind(req.URL.Path)
	r.counts[req.Method+" "+kind]++
	if req.Method == http.MethodHead && kind == "manifest" {
		r.heads[req.URL.Path]++
	}
	q := req.URL.Query()
	if d := q.Get("digest"); d != "" && kind == "upload" && (req.Method == http.MethodPut || req.Method == http.MethodPost) {
		r.uploads[d]++
	}
	if q.Get("mount") != "" && req.Method == http.MethodPost {
		r.counts["POST mount"]++
	}
}

func (r *testRegistry) reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.counts, r.heads, r.uploads = map[string]int{}, map[string]int{}, map[string]int{}
}

func (r *testRegistry) count(kind string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.counts[kind]
}

// writes counts the requests that change something: uploads and manifest PUTs.
func (r *testRegistry) writes() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for k, c := range r.counts {
		if strings.HasPrefix(k, "POST ") || strings.HasPrefix(k, "PATCH ") || strings.HasPrefix(k, "PUT ") {
			n += c
		}
	}
	return n
}

func (r *testRegistry) uploadsOf(digest string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.uploads[digest]
}

func (r *testRegistry) headsByPath() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]int, len(r.heads))
	for k, v := range r.heads {
		out[k] = v
	}
	return out
}

func (r *testRegistry) ref(t *testing.T, s string) name.Reference {
	t.Helper()
	ref, err := name.ParseReference(r.host + "/" + s)
	if err != nil {
		t.Fatal(err)
	}
	return ref
}

// push writes img or an index to REGISTRY/ref and returns its digest.
func (r *testRegistry) push(t *testing.T, ref string, t2 remote.Taggable) v1.Hash {
	t.Helper()
	dst := r.ref(t, ref)
	var err error
	switch v := t2.(type) {
	case v1.ImageIndex:
		err = remote.WriteIndex(dst, v)
	case v1.Image:
		err = remote.Write(dst, v)
	default:
		t.Fatalf("cannot push %T", t2)
	}
	if err != nil {
		t.Fatalf("push %s: %v", dst, err)
	}
	return r.digest(t, ref)
}

// digest HEADs REGISTRY/ref; a zero hash if it is missing.
func (r *testRegistry) digest(t *testing.T, ref string) v1.Hash {
	t.Helper()
	desc, err := remote.Head(r.ref(t, ref))
	if err != nil {
		if isNotFound(err) {
			return v1.Hash{}
		}
		t.Fatalf("head %s: %v", ref, err)
	}
	return desc.Digest
}

func randomImage(t *testing.T, layers int64) v1.Image {
	t.Helper()
	img, err := random.Image(1024, layers)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// multiPlatform returns an index of random images for linux/amd64, linux/arm64
// and linux/arm/v7.
func multiPlatform(t *testing.T) v1.ImageIndex {
	t.Helper()
	var adds []mutate.IndexAddendum
	for _, p := range []v1.Platform{
		{OS: "linux", Architecture: "amd64"},
		{OS: "linux", Architecture: "arm64"},
		{OS: "linux", Architecture: "arm", Variant: "v7"},
	} {
		p := p
		adds = append(adds, mutate.IndexAddendum{Add: randomImage(t, 2), Descriptor: v1.Descriptor{Platform: &p}})
	}
	return mutate.AppendManifests(empty.Index, adds...)
}

// refusedAddr is a loopback address nothing listens on.
func refusedAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// run validates and runs task, failing the test on an error.
func run(t *testing.T, task tasks.Task) (tasks.Outputs, string) {
	t.Helper()
	out, log, err := tryRun(context.Background(), t, task)
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, log)
	}
	return out, log
}

// tryRun validates and runs task, returning its outputs, what it printed and its error.
func tryRun(ctx context.Context, t *testing.T, task tasks.Task) (tasks.Outputs, string, error) {
	if err := task.Validate(); err != nil {
		return nil, "", err
	}
	env, printed := taskstest.NewEnv(t)
	out, err := task.Run(ctx, env)
	return out, printed.String(), err
}
