package image

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/zclconf/go-cty/cty"
)

// sourceImages pushes n single-platform images and one multi-platform index to
// src and returns the source references, as image_mirror's images list.
func sourceImages(t *testing.T, src *testRegistry, n int) []string {
	t.Helper()
	var refs []string
	for i := range n {
		ref := fmt.Sprintf("team/app%d:v%d", i, i)
		src.push(t, ref, randomImage(t, 3))
		refs = append(refs, src.host+"/"+ref)
	}
	src.push(t, "team/multi:v1", multiPlatform(t))
	return append(refs, src.host+"/team/multi:v1")
}

func listValue(refs []string) cty.Value {
	vals := make([]cty.Value, len(refs))
	for i, r := range refs {
		vals[i] = cty.StringVal(r)
	}
	return cty.TupleVal(vals)
}

// assertMirrored checks that every source is at the target under the same
// path and tag with the same digest, and that the output pins it.
func assertMirrored(t *testing.T, src, dst *testRegistry, refs []string, out map[string]cty.Value) {
	t.Helper()
	for _, r := range refs {
		path := strings.TrimPrefix(r, src.host+"/")
		want := src.digest(t, path)
		if got := dst.digest(t, path); got != want {
			t.Errorf("%s at the target: digest %v, want %v", path, got, want)
		}
		repo, _, _ := strings.Cut(path, ":")
		if pin := out[r]; pin.IsNull() || pin.AsString() != dst.host+"/"+repo+"@"+want.String() {
			t.Errorf("images[%q] = %#v, want %s/%s@%s", r, pin, dst.host, repo, want)
		}
	}
}

func outputMap(t *testing.T, out map[string]cty.Value) map[string]cty.Value {
	t.Helper()
	v, ok := out["images"]
	if !ok || !v.Type().IsMapType() {
		t.Fatalf("outputs = %#v, want an images map", out)
	}
	return v.AsValueMap()
}

func TestMirrorCopiesThenSkips(t *testing.T) {
	src, dst := newTestRegistry(t), newTestRegistry(t)
	refs := sourceImages(t, src, 5)
	task := func() *Mirror { return &Mirror{Images: listValue(refs), Registry: dst.host} }

	out, log := run(t, task())
	assertMirrored(t, src, dst, refs, outputMap(t, out))
	if !strings.Contains(log, "6 copied, 0 already present") {
		t.Errorf("first run log:\n%s", log)
	}

	dst.reset()
	src.reset()
	out, log = run(t, task())
	if n := dst.writes(); n != 0 {
		t.Errorf("second run sent %d writes to the target, want none", n)
	}
	if n := dst.count("GET blob") + dst.count("HEAD blob") + dst.count("GET manifest"); n != 0 {
		t.Errorf("second run sent %d blob or manifest GET/HEAD requests to the target, want none", n)
	}
	heads := dst.headsByPath()
	if len(heads) != len(refs) {
		t.Errorf("second run HEADed %d manifests at the target, want %d: %v", len(heads), len(refs), heads)
	}
	for p, n := range heads {
		if n != 1 {
			t.Errorf("second run: %d HEADs of %s at the target, want exactly 1", n, p)
		}
	}
	if n := src.count("GET blob"); n != 0 {
		t.Errorf("second run read %d blobs from the source, want none", n)
	}
	if got := strings.Count(log, ": already present\n"); got != len(refs) {
		t.Errorf("second run: %d lines say already present, want %d:\n%s", got, len(refs), log)
	}
	assertMirrored(t, src, dst, refs, outputMap(t, out)) // HEADs of its own: last
}

func TestMirrorNamingAndPlatforms(t *testing.T) {
	src, dst := newTestRegistry(t), newTestRegistry(t)
	src.push(t, "karmada/karmada-scheduler:v1.13.0", multiPlatform(t))
	source := src.host + "/karmada/karmada-scheduler:v1.13.0"
	m := &Mirror{Images: listValue([]string{source}), Registry: dst.host, Prefix: "lab/karmada", Naming: "flatten", Platforms: []string{"linux/arm64", "linux/arm/v7"}}

	out, _ := run(t, m)
	target := "lab/karmada/karmada-scheduler:v1.13.0"
	got := dst.digest(t, target)
	if got == (v1.Hash{}) || got == src.digest(t, "karmada/karmada-scheduler:v1.13.0") {
		t.Fatalf("filtered index digest %v: want one that differs from the source's", got)
	}
	if pin := outputMap(t, out)[source].AsString(); pin != dst.host+"/lab/karmada/karmada-scheduler@"+got.String() {
		t.Errorf("output %s, want the filtered digest %s", pin, got)
	}
	idx, err := remote.Index(dst.ref(t, target))
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	var plats []string
	for _, d := range im.Manifests {
		plats = append(plats, d.Platform.String())
		if _, err := idx.Image(d.Digest); err != nil {
			t.Errorf("child %s missing at the target: %v", d.Digest, err)
		}
	}
	if strings.Join(plats, ",") != "linux/arm64,linux/arm/v7" {
		t.Errorf("target index has %v, want linux/arm64 and linux/arm/v7", plats)
	}

	dst.reset()
	_, log := run(t, m)
	if dst.writes() != 0 || dst.count("HEAD manifest") != 1 || !strings.Contains(log, "already present") {
		t.Errorf("re-run: %d writes, %d manifest HEADs at the target, want 0 and 1\n%s", dst.writes(), dst.count("HEAD manifest"), log)
	}
}

func TestMirrorMapTargets(t *testing.T) {
	src, dst := newTestRegistry(t), newTestRegistry(t)
	d := src.push(t, "upstream/tool:1.0", randomImage(t, 1))
	source := src.host + "/upstream/tool:1.0"
	pinnedSource := src.host + "/upstream/tool@" + d.String()
	m := &Mirror{
		Images: cty.ObjectVal(map[string]cty.Value{
			source:       cty.StringVal("tools/renamed:stable"),
			pinnedSource: cty.StringVal("tools/pinned"),
		}),
		Registry: dst.host, Prefix: "p",
	}
	out, _ := run(t, m)
	if got := dst.digest(t, "p/tools/renamed:stable"); got != d {
		t.Errorf("renamed: digest %v, want %v", got, d)
	}
	if got := dst.digest(t, "p/tools/pinned@"+d.String()); got != d {
		t.Errorf("pinned source pushed by digest: %v, want %v", got, d)
	}
	images := outputMap(t, out)
	if images[pinnedSource].AsString() != dst.host+"/p/tools/pinned@"+d.String() {
		t.Errorf("images = %v", images)
	}
}

// faultProxy stands in front of a registry: the first request for every
// manifest gets 429 with Retry-After: 1, and every third blob GET gets 500.
type faultProxy struct {
	host string

	mu       sync.Mutex
	limited  map[string]time.Time // path -> when it answered 429
	retried  map[string]time.Duration
	blobGets int
	fives    int
}

func newFaultProxy(t *testing.T, upstream string) *faultProxy {
	t.Helper()
	f := &faultProxy{limited: map[string]time.Time{}, retried: map[string]time.Duration{}}
	target, _ := url.Parse("http://" + upstream)
	proxy := httputil.NewSingleHostReverseProxy(target)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if status, after := f.fault(r); status != 0 {
			if after != "" {
				w.Header().Set("Retry-After", after)
			}
			http.Error(w, http.StatusText(status), status)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	f.host = strings.TrimPrefix(srv.URL, "http://")
	return f
}

func (f *faultProxy) fault(r *http.Request) (status int, retryAfter string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch pathKind(r.URL.Path) {
	case "manifest":
		at, seen := f.limited[r.URL.Path]
		if !seen {
			f.limited[r.URL.Path] = time.Now()
			return http.StatusTooManyRequests, "1"
		}
		if _, done := f.retried[r.URL.Path]; !done {
			f.retried[r.URL.Path] = time.Since(at)
		}
	case "blob":
		if r.Method != http.MethodGet {
			return 0, ""
		}
		f.blobGets++
		if f.blobGets%3 == 0 {
			f.fives++
			return http.StatusInternalServerError, ""
		}
	}
	return 0, ""
}

func TestMirrorRetriesThroughFaults(t *testing.T) {
	src, dst := newTestRegistry(t), newTestRegistry(t)
	for i := range 3 {
		src.push(t, fmt.Sprintf("flaky/img%d:v1", i), randomImage(t, 3))
	}
	proxy := newFaultProxy(t, src.host)
	var refs []string
	for i := range 3 {
		refs = append(refs, fmt.Sprintf("%s/flaky/img%d:v1", proxy.host, i))
	}
	out, _ := run(t, &Mirror{Images: listValue(refs), Registry: dst.host})
	images := outputMap(t, out)
	for i, r := range refs {
		path := fmt.Sprintf("flaky/img%d:v1", i)
		want := src.digest(t, path)
		if got := dst.digest(t, path); got != want {
			t.Errorf("%s: target digest %v, want %v", path, got, want)
		}
		if !strings.HasSuffix(images[r].AsString(), "@"+want.String()) {
			t.Errorf("images[%q] = %s, want it pinned at %s", r, images[r].AsString(), want)
		}
	}
	proxy.mu.Lock()
	defer proxy.mu.Unlock()
	if proxy.fives == 0 {
		t.Error("the proxy never injected a 500; the test does not test retries")
	}
	if len(proxy.retried) == 0 {
		t.Fatal("no request was repeated after a 429")
	}
	for p, waited := range proxy.retried {
		if waited < 900*time.Millisecond {
			t.Errorf("%s repeated %v after a 429 with Retry-After: 1", p, waited)
		}
	}
}

func TestMirrorErrors(t *testing.T) {
	src, dst := newTestRegistry(t), newTestRegistry(t)
	src.push(t, "ok/img:v1", randomImage(t, 1))
	refused := refusedAddr(t)
	locked := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
		http.Error(w, "authentication required", http.StatusUnauthorized)
	}))
	defer locked.Close()
	lockedHost := strings.TrimPrefix(locked.URL, "http://")
	tests := []struct {
		name     string
		images   []string
		registry string
		want     []string
	}{
		{"unknown image", []string{src.host + "/ok/img:v1", src.host + "/nope/missing:v1"}, dst.host,
			[]string{`mirror: 1 of 2 images failed`, fmt.Sprintf(`mirror %q: source registry %q: not found`, src.host+"/nope/missing:v1", src.host)}},
		{"source refused", []string{refused + "/gone/img:v1"}, dst.host,
			[]string{fmt.Sprintf(`mirror %q: source registry %q: connection refused`, refused+"/gone/img:v1", refused)}},
		{"source unauthorized", []string{lockedHost + "/private/img:v1"}, dst.host,
			[]string{fmt.Sprintf(`mirror %q: source registry %q: unauthorized`, lockedHost+"/private/img:v1", lockedHost)}},
		{"target refused", []string{src.host + "/ok/img:v1"}, refused,
			[]string{fmt.Sprintf(`mirror %q: target registry %q: connection refused`, src.host+"/ok/img:v1", refused)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			_, log, err := tryRun(context.Background(), t, &Mirror{Images: listValue(tt.images), Registry: tt.registry})
			if err == nil {
				t.Fatalf("Run succeeded, want an error\n%s", log)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\nwant it to contain %q", err, w)
				}
			}
			// A refused registry may be restarting: it is asked again for the
			// policy's ~8 s of backoff (docs/language.md, transient faults).
			if took := time.Since(start); took > 15*time.Second {
				t.Errorf("took %v to fail", took)
			}
		})
	}
}

func TestMirrorCancel(t *testing.T) {
	src, dst := newTestRegistry(t), newTestRegistry(t)
	src.push(t, "slow/img:v1", randomImage(t, 2))
	stalled := make(chan struct{})
	var once sync.Once
	target, _ := url.Parse("http://" + src.host)
	proxy := httputil.NewSingleHostReverseProxy(target)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if pathKind(r.URL.Path) == "blob" && r.Method == http.MethodGet {
			once.Do(func() { close(stalled) })
			<-r.Context().Done() // a registry that never answers
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, _, err := tryRun(ctx, t, &Mirror{Images: listValue([]string{strings.TrimPrefix(srv.URL, "http://") + "/slow/img:v1"}), Registry: dst.host})
		done <- err
	}()
	select {
	case <-stalled:
	case <-time.After(10 * time.Second):
		t.Fatal("mirror never asked for a blob")
	}
	start := time.Now()
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Run error = %v, want context.Canceled", err)
		}
		if took := time.Since(start); took > time.Second {
			t.Errorf("Run returned %v after cancel", took)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return within 5s of cancel")
	}
}

// rawManifest is a manifest pushed byte for byte, as a registry may hold one
// that go-containerregistry would have serialised differently.
type rawManifest struct {
	mt  types.MediaType
	raw []byte
}

func (r rawManifest) RawManifest() ([]byte, error)        { return r.raw, nil }
func (r rawManifest) MediaType() (types.MediaType, error) { return r.mt, nil }

// When platforms keeps every manifest of an index, the index is copied as it is:
// same bytes, same digest, so references pinned to the source digest still
// resolve at the target.
func TestMirrorPlatformsKeepingWholeIndex(t *testing.T) {
	src, dst := newTestRegistry(t), newTestRegistry(t)
	index := multiPlatform(t)
	src.push(t, "lab/multi:base", index) // the children
	im, err := index.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := json.MarshalIndent(im, "", "   ") // other bytes than ggcr's json.Marshal
	if err != nil {
		t.Fatal(err)
	}
	mt, _ := index.MediaType()
	if err := remote.Put(src.ref(t, "lab/multi:v1"), rawManifest{mt, raw}); err != nil {
		t.Fatal(err)
	}
	want := src.digest(t, "lab/multi:v1")
	source := src.host + "/lab/multi:v1"
	m := &Mirror{Images: listValue([]string{source}), Registry: dst.host, Platforms: []string{"linux/amd64", "linux/arm64", "linux/arm/v7"}}

	out, _ := run(t, m)
	if got := dst.digest(t, "lab/multi:v1"); got != want {
		t.Errorf("target digest %v, want the source's %v: nothing was filtered out", got, want)
	}
	if pin := outputMap(t, out)[source].AsString(); pin != dst.host+"/lab/multi@"+want.String() {
		t.Errorf("output %s, want it pinned at %s", pin, want)
	}
	dst.reset()
	_, log := run(t, m)
	if dst.writes() != 0 || dst.count("HEAD manifest") != 1 || !strings.Contains(log, "already present") {
		t.Errorf("re-run: %d writes, %d manifest HEADs at the target, want 0 and 1\n%s", dst.writes(), dst.count("HEAD manifest"), log)
	}
}
