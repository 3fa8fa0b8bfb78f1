package e2e

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// stoppableRegistry serves a registryServer's registry on a fixed loopback port
// and can stop and start again there, keeping what it stores, as a registry
// process that restarts keeps its storage.
type stoppableRegistry struct {
	*registryServer
	handler http.Handler

	mu       sync.Mutex
	srv      *http.Server
	requests int                  // requests served so far, numbering them
	inFlight map[string]int       // manifest PUTs being served, by path
	lastPut  map[string]putRecord // the last manifest PUT served of a path
	cut      map[string]bool
}

// putRecord says on which connection a manifest PUT was answered, and as which request.
type putRecord struct {
	conn *connRecord
	n    int
}

// connRecord is one client connection: the number of the last request it carried.
type connRecord struct{ last int }

type connKey struct{}

func newStoppableRegistry(t *testing.T) *stoppableRegistry {
	t.Helper()
	r := &stoppableRegistry{registryServer: &registryServer{manifests: map[string][]int{}, blobs: map[string][]int{}}}
	inner := r.registryServer.handler(true)
	r.inFlight, r.lastPut, r.cut = map[string]int{}, map[string]putRecord{}, map[string]bool{}
	r.handler = http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		conn, _ := req.Context().Value(connKey{}).(*connRecord)
		r.mu.Lock()
		r.requests++
		n := r.requests
		if conn != nil {
			conn.last = n
		}
		r.mu.Unlock()
		isManifest := req.Method == http.MethodPut && strings.Contains(req.URL.Path, "/manifests/")
		if isManifest {
			r.mu.Lock()
			r.inFlight[req.URL.Path]++
			r.mu.Unlock()
			defer func() {
				r.mu.Lock()
				r.inFlight[req.URL.Path]--
				r.lastPut[req.URL.Path] = putRecord{conn: conn, n: n}
				r.mu.Unlock()
			}()
		}
		inner.ServeHTTP(w, req)
	})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r.host = l.Addr().String()
	r.serve(l)
	t.Cleanup(r.stop)
	return r
}

func (r *stoppableRegistry) serve(l net.Listener) {
	srv := &http.Server{Handler: r.handler, ConnContext: func(ctx context.Context, _ net.Conn) context.Context {
		return context.WithValue(ctx, connKey{}, &connRecord{})
	}}
	r.mu.Lock()
	r.srv = srv
	r.mu.Unlock()
	go func() { _ = srv.Serve(l) }()
}

// stop closes the listener and every open connection: requests in flight see a
// reset or EOF, new ones a refusal. It records the manifest PUTs it cut: those in
// flight, and those whose connection carried no later request, since the client may
// not have read their answer yet (on a loaded machine, for longer than any fixed
// window) and the reset discards it; the client cannot know whether they took
// effect, and repeats them. A PUT followed by another request on its connection was
// answered, so a repeat of it is a bug.
func (r *stoppableRegistry) stop() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for path, n := range r.inFlight {
		if n > 0 {
			r.cut[path] = true
		}
	}
	for path, put := range r.lastPut {
		if put.conn == nil || put.conn.last == put.n {
			r.cut[path] = true
		}
	}
	if r.srv != nil {
		_ = r.srv.Close()
		r.srv = nil
	}
}

// restart listens on the same port again.
func (r *stoppableRegistry) restart(t *testing.T) {
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		l, err := net.Listen("tcp", r.host)
		if err == nil {
			r.serve(l)
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("restart the registry on %s: %v", r.host, err)
			return
		}
	}
}

// TestFaultRegistryRestart stops the target registry of an image_mirror of 30
// images for 1 to 3 s after a seeded number of manifests were written, and starts
// it again on the same port with its storage: the run succeeds without a resume,
// every image arrives with the source's digest and no manifest is written twice.
func TestFaultRegistryRestart(t *testing.T) {
	binary(t)
	rng := faultRNG(t)
	src := newRegistryServer(t, false)
	groups := mirrorSetup(t, src)
	tag := newTag(t)
	for trial := 1; trial <= faultTrials; trial++ {
		dst := newStoppableRegistry(t)
		dir := t.TempDir()
		state := filepath.Join(dir, "state.db")
		after := 3 + rng.IntN(mirrorImages/2)
		down := seededDuration(rng, time.Second, 3*time.Second)
		name := fmt.Sprintf("trial %d (stopped after %d manifests for %s)", trial, after, down.Round(10*time.Millisecond))
		p := start(t, tag, dir, "run", testdata(t, "mirror.hcl"), "--state", state,
			"--var", "source="+src.host, "--var", "target="+dst.host, "--var", "groups="+hclGroups(groups))
		for deadline := time.Now().Add(time.Minute); dst.manifestsWritten() < after; time.Sleep(2 * time.Millisecond) {
			if p.exited() || time.Now().After(deadline) {
				t.Fatalf("%s: %d manifests written before the run ended or a minute passed\n%s", name, dst.manifestsWritten(), p.describe())
			}
		}
		dst.stop()
		time.Sleep(down)
		dst.restart(t)
		if !p.wait(2 * time.Minute) {
			t.Fatalf("%s: the run did not finish in 2m\n%s", name, p.describe())
		}
		r := result{code: p.code(), stdout: p.stdout.String(), stderr: p.stderr.String(), desc: p.describe()}
		checkRunWhole(t, name, r, tag, dir, state)
		for _, paths := range groups {
			for _, path := range paths {
				if got, want := digestAt(t, dst.host, path), digestAt(t, src.host, path); got != want {
					t.Errorf("%s: %s: target digest %s, want %s", name, path, got, want)
				}
			}
		}
		// A PUT the stop cut may be repeated (the client cannot know it took
		// effect, and a manifest PUT is idempotent); any other repeat is a bug.
		dst.registryServer.mu.Lock()
		var repeated []string
		again := 0
		for path, phases := range dst.manifests {
			if len(phases) > 1 {
				again++
				if !dst.cut[path] {
					repeated = append(repeated, path)
				}
			}
		}
		n := len(dst.manifests)
		dst.registryServer.mu.Unlock()
		if len(repeated) > 0 || n != mirrorImages {
			t.Errorf("%s: %d manifests written; written again though no stop cut them: %v", name, n, repeated)
		}
		t.Logf("%s: run took %s; %d manifest(s) written again, all cut by the stop (in flight or answer on the way); %d retry line(s)",
			name, p.ended.Sub(p.began).Round(10*time.Millisecond), again, len(retryLines(r.stdout+r.stderr)))
		dst.stop()
	}
}
