package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/validate"

	"github.com/flowdev/flow/internal/ci"
)

// dockerRegistry is Debian's distribution 2.8, the registry the labs run
// (scripts/prereqs.sh installs it).
const dockerRegistry = "/usr/bin/docker-registry"

// labRegistryPort is the lab registry's port; a test's registry never takes it.
const labRegistryPort = 32000

// registryProcess is docker-registry run by the test as a child process with a
// config of its own: filesystem storage in a temp dir, a free loopback port. kill
// SIGKILLs it, start runs it again on the same storage and port, as a registry that
// crashes and comes back.
//
// It reads the registry's JSON log as the registry writes it. At debug level
// distribution logs every request's start ("authorizing request", before its
// handler runs) and at info level its end ("response completed", with the
// status), each with the client's address, which names the connection. From those
// it counts the writes — manifest PUTs by path, completed blob uploads (an upload
// request carrying ?digest=) by digest, as TestMirrorKillAndResume counts them —
// that took effect (answered 2xx) or may have (cut by a kill in flight), and, at a
// kill, which of them the kill may have cut.
type registryProcess struct {
	host, dir, config string

	mu     sync.Mutex
	gen    int // incarnation: 1, 2, ... (connections are named within one)
	cmd    *exec.Cmd
	waited chan struct{} // closed once the incarnation was waited for
	read   chan struct{} // closed once its log was read to its end
	log    []string      // every incarnation's warnings and errors, for a failure
	reqs   map[string]*regRequest
	last   map[string]*regRequest // by connection: the last request started on it
	order  []*regRequest          // writes (see writeKey), in the order they started
	// inFlight counts writes started and never answered, at the kills.
	inFlight int
	rejected []string // writes answered 4xx or 5xx
}

// regRequest is one request the registry logged.
type regRequest struct {
	method, uri, conn string
	gen               int
	status            int  // 0 until "response completed"
	inFlight          bool // started, not answered when the kill came
	cut               bool // the kill may have discarded the answer, or the request
}

// wrote reports whether the request may have written: it was answered 2xx, or the
// kill cut it before its answer (it may have taken effect).
func (r *regRequest) wrote() bool {
	return r.inFlight || (r.status >= 200 && r.status <= 299)
}

// writeKey says what a request writes: "manifest PATH" or "blob DIGEST" (the
// request that completes an upload), or "" for anything else.
func (r *regRequest) writeKey() string {
	u, err := url.Parse(r.uri)
	if err != nil {
		return ""
	}
	switch {
	case r.method == "PUT" && strings.Contains(u.Path, "/manifests/"):
		return "manifest " + u.Path
	case strings.Contains(u.Path, "/blobs/uploads") && u.Query().Get("digest") != "":
		return "blob " + u.Query().Get("digest")
	}
	return ""
}

// startRegistryProcess runs docker-registry on a free loopback port (never the
// lab's 32000). Without the binary it skips the test, except under CI
// (internal/ci), where a missing binary fails it: make test installs it.
func startRegistryProcess(t *testing.T, secret bool) *registryProcess {
	t.Helper()
	if _, err := os.Stat(dockerRegistry); err != nil {
		msg := fmt.Sprintf("%s is missing (Debian package docker-registry; scripts/prereqs.sh installs it): %v", dockerRegistry, err)
		if ci.Enabled() {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	dir := t.TempDir()
	r := &registryProcess{dir: dir, config: filepath.Join(dir, "config.yml"),
		host: "127.0.0.1:" + strconv.Itoa(freeFixedPort(t)),
		reqs: map[string]*regRequest{}, last: map[string]*regRequest{}}
	config := fmt.Sprintf("version: 0.1\nlog:\n  level: debug\n  formatter: json\n  accesslog:\n    disabled: true\n"+
		"storage:\n  filesystem:\n    rootdirectory: %s\nhttp:\n  addr: %s\n", filepath.Join(dir, "data"), r.host)
	if secret {
		config += "  secret: flow-fault-test\n"
	}
	if err := os.WriteFile(r.config, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	r.start(t)
	t.Cleanup(func() {
		r.kill(t)
		if t.Failed() {
			r.mu.Lock()
			defer r.mu.Unlock()
			t.Logf("docker-registry on %s, its log but debug lines (last 60):\n%s", r.host, strings.Join(lastN(r.log, 60), "\n"))
		}
	})
	return r
}

// freeFixedPort returns a loopback port below the kernel's ephemeral range (so no
// outgoing connection takes it while the registry is down) that is free now and
// is not the lab registry's.
func freeFixedPort(t *testing.T) int {
	t.Helper()
	low := 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil {
				low = n
			}
		}
	}
	for range 100 {
		port := 20000 + rand.IntN(max(low-20000, 1000))
		if port == labRegistryPort || port >= low {
			continue
		}
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err == nil {
			l.Close()
			return port
		}
	}
	t.Fatal("no free loopback port below the ephemeral range after 100 tries")
	return 0
}

// start runs a new incarnation on the same config (storage and port) and waits
// until it listens.
func (r *registryProcess) start(t *testing.T) {
	t.Helper()
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(dockerRegistry, "serve", r.config)
	cmd.Stdout, cmd.Stderr = pw, pw
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		pr.Close()
		pw.Close()
		t.Fatalf("start %s: %v", dockerRegistry, err)
	}
	pw.Close() // the registry holds the only write end: its death ends the log
	waited, read := make(chan struct{}), make(chan struct{})
	r.mu.Lock()
	r.gen++
	gen := r.gen
	r.cmd, r.waited, r.read = cmd, waited, read
	r.last = map[string]*regRequest{}
	r.mu.Unlock()
	go func() { _ = cmd.Wait(); close(waited) }()
	go func() {
		defer close(read)
		defer pr.Close()
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			r.logLine(gen, sc.Text())
		}
	}()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if c, err := net.Dial("tcp", r.host); err == nil {
			c.Close()
			return
		}
		select {
		case <-waited:
			<-read
			t.Fatalf("docker-registry (incarnation %d) exited before it listened on %s: %s", gen, r.host, cmd.ProcessState)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("docker-registry (incarnation %d) did not listen on %s within 10s", gen, r.host)
		}
	}
}

// kill SIGKILLs the running incarnation (a no-op when none runs), waits until its
// log is read to the end, and marks the writes it may have cut: each connection's
// last request, when it was answered, since nothing says the client read that
// answer before the kill discarded it. A write followed by another request on its
// connection was answered and read (HTTP/1.1 clients send the next request once
// they read the last answer), so a repeat of it is a bug. A write in flight (started,
// never answered) is cut too, and counted as written: it may have taken effect.
func (r *registryProcess) kill(t *testing.T) {
	t.Helper()
	r.mu.Lock()
	cmd, waited, read := r.cmd, r.waited, r.read
	r.cmd = nil
	r.mu.Unlock()
	if cmd == nil {
		return
	}
	if err := syscall.Kill(cmd.Process.Pid, syscall.SIGKILL); err != nil {
		t.Errorf("kill docker-registry (pid %d): %v", cmd.Process.Pid, err)
	}
	<-waited
	<-read
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, req := range r.last {
		if req.status == 0 && req.method != "GET" && req.method != "HEAD" {
			r.inFlight++
		}
		if req.writeKey() != "" {
			req.cut = true
			req.inFlight = req.status == 0
		}
	}
}

// logEntry is the part of a distribution JSON log line the test reads.
type logEntry struct {
	Level  string `json:"level"`
	Msg    string `json:"msg"`
	ID     string `json:"http.request.id"`
	Method string `json:"http.request.method"`
	URI    string `json:"http.request.uri"`
	Remote string `json:"http.request.remoteaddr"`
	Status int    `json:"http.response.status"`
	Detail string `json:"err.detail"`
	Name   string `json:"vars.name"`
	Ref    string `json:"vars.reference"`
}

func (r *registryProcess) logLine(gen int, line string) {
	var e logEntry
	if err := json.Unmarshal([]byte(line), &e); err != nil {
		r.mu.Lock()
		r.log = append(r.log, line)
		r.mu.Unlock()
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if e.Level != "debug" && e.Level != "info" {
		r.log = append(r.log, line)
	}
	switch e.Msg {
	case "authorizing request":
		req := &regRequest{method: e.Method, uri: e.URI, conn: e.Remote, gen: gen}
		r.reqs[e.ID] = req
		r.last[e.Remote] = req
		if req.writeKey() != "" {
			r.order = append(r.order, req)
		}
	case "response completed", "response completed with error":
		req := r.reqs[e.ID]
		if req == nil { // not through the dispatcher: no start logged
			req = &regRequest{method: e.Method, uri: e.URI, conn: e.Remote, gen: gen}
			r.reqs[e.ID] = req
			if req.writeKey() != "" {
				r.order = append(r.order, req)
			}
		}
		req.status = e.Status
		if e.Status >= 400 && e.Method != "HEAD" && e.Method != "GET" {
			path, _, _ := strings.Cut(e.URI, "?")
			r.rejected = append(r.rejected, fmt.Sprintf("%s %s: %d (incarnation %d)", e.Method, path, e.Status, gen))
		}
	}
}

// corruptedLink reports whether the registry answered a request with "invalid checksum
// digest format": a kill while distribution's filesystem driver rewrote a link file
// left it empty, and the registry answers every HEAD of that blob or tag with 500
// until it is written again, which the mirror then does (TestMirrorRepairsEmptiedLinks).
func (r *registryProcess) corruptedLink() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, line := range r.log {
		if strings.Contains(line, "invalid checksum digest format") {
			return true
		}
	}
	return false
}

// lostManifest reports whether the registry itself could not read back the
// manifest of path (repository:tag), "unexpected end of JSON input", waiting up
// to a second for its log to say so: a kill cut the write of the manifest's
// content. distribution's filesystem driver writes that content in place, and a
// later PUT of the same manifest finds the (truncated) file there and keeps it,
// as content-addressed storage may; so no client can repair it, and the trial
// logs it as the registry's loss (docs/reliability.md).
func (r *registryProcess) lostManifest(path string) bool {
	for deadline := time.Now().Add(time.Second); ; time.Sleep(50 * time.Millisecond) {
		r.mu.Lock()
		for _, line := range r.log {
			var e logEntry
			if json.Unmarshal([]byte(line), &e) == nil && e.Detail == "unexpected end of JSON input" && e.Name+":"+e.Ref == path {
				r.mu.Unlock()
				return true
			}
		}
		r.mu.Unlock()
		if time.Now().After(deadline) {
			return false
		}
	}
}

// manifestsWritten is the number of distinct manifests written so far.
func (r *registryProcess) manifestsWritten() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	seen := map[string]bool{}
	for _, req := range r.order {
		if k := req.writeKey(); strings.HasPrefix(k, "manifest ") && req.status/100 == 2 {
			seen[k] = true
		}
	}
	return len(seen)
}

// written returns the writes that took effect or may have, by what they wrote,
// each in the order they started.
func (r *registryProcess) written() map[string][]*regRequest {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string][]*regRequest{}
	for _, req := range r.order {
		if req.wrote() {
			k := req.writeKey()
			out[k] = append(out[k], req)
		}
	}
	return out
}

// lastN returns the last n of lines.
func lastN(lines []string, n int) []string {
	if len(lines) > n {
		return lines[len(lines)-n:]
	}
	return lines
}

const (
	registryTrials = 4 // alternately with and without an HTTP secret
	registryKills  = 2 // per trial
)

// TestFaultRegistryRestart runs an image_mirror of 30 images into Debian's
// docker-registry, the registry the labs run, as a child process of the test
// with its own storage, and SIGKILLs it twice in each trial, each time once a
// seeded number of manifests were written, and starts it again 1 to 3 s later on
// the same storage and port: the run succeeds without a resume, every image
// arrives whole with the source's digest, and no manifest or blob is written twice
// unless a kill cut the first write's answer. Trials alternate between a fixed HTTP
// secret, with which the restarted registry resumes the uploads the killed one
// began, and the labs' config, without one, with which a restart voids them.
//
// It catches an upload step repeated after a dropped connection (the step may have
// arrived: the resumed upload turns the repeat away) and a manifest PUT sent again
// after its answer was read (tried as mutations; docs/reliability.md).
func TestFaultRegistryRestart(t *testing.T) {
	binary(t)
	rng := faultRNG(t)
	src := newRegistryServer(t, false)
	groups := mirrorSetup(t, src)
	tag := newTag(t)
	for trial := 1; trial <= registryTrials; trial++ {
		secret := trial%2 == 1
		dst := startRegistryProcess(t, secret)
		dir := t.TempDir()
		state := filepath.Join(dir, "state.db")
		var afters []int
		var downs []time.Duration
		for i, after := 0, 0; i < registryKills; i++ {
			after += 3 + rng.IntN((mirrorImages-after-3)/2)
			afters = append(afters, after)
			downs = append(downs, seededDuration(rng, time.Second, 3*time.Second))
		}
		var kills []string
		for i := range afters {
			kills = append(kills, fmt.Sprintf("after %d manifests for %s", afters[i], downs[i].Round(10*time.Millisecond)))
		}
		config := "the lab's config, no secret"
		if secret {
			config = "a secret"
		}
		name := fmt.Sprintf("trial %d (%s; killed %s)", trial, config, strings.Join(kills, ", then "))
		p := start(t, tag, dir, "run", testdata(t, "mirror.hcl"), "--state", state,
			"--var", "source="+src.host, "--var", "target="+dst.host, "--var", "groups="+hclGroups(groups))
		for i, after := range afters {
			for deadline := time.Now().Add(time.Minute); dst.manifestsWritten() < after; time.Sleep(2 * time.Millisecond) {
				if p.exited() || time.Now().After(deadline) {
					t.Fatalf("%s: %d manifests written before the run ended or a minute passed\n%s", name, dst.manifestsWritten(), p.describe())
				}
			}
			dst.kill(t)
			time.Sleep(downs[i])
			dst.start(t)
		}
		if !p.wait(2 * time.Minute) {
			t.Fatalf("%s: the run did not finish in 2m\n%s", name, p.describe())
		}
		r := result{code: p.code(), stdout: p.stdout.String(), stderr: p.stderr.String(), desc: p.describe()}
		checkRunWhole(t, name, r, tag, dir, state)
		for _, paths := range groups {
			for _, path := range paths {
				got, err := headDigest(dst.host, path)
				if err != nil && dst.lostManifest(path) {
					t.Logf("%s: %s: the registry lost the manifest's content to a kill, which no client can repair: %v", name, path, err)
					continue
				}
				if want := digestAt(t, src.host, path); err != nil || got != want {
					t.Errorf("%s: %s: target digest %s (%v), want %s", name, path, got, err, want)
				}
				if err := pullWhole(dst.host, path); err != nil {
					t.Errorf("%s: %v", name, err)
				}
			}
		}
		// A write whose answer a kill cut may be repeated (the client cannot know it
		// took effect, and both writes are idempotent); any other repeat is a bug.
		manifests, blobs, again := 0, 0, map[string]int{}
		var repeated []string
		for key, reqs := range dst.written() {
			kind, _, _ := strings.Cut(key, " ")
			if kind == "manifest" {
				manifests++
			} else {
				blobs++
			}
			if len(reqs) > 1 {
				again[kind]++
			}
			for _, req := range reqs[:len(reqs)-1] {
				if !req.cut {
					repeated = append(repeated, fmt.Sprintf("%s (incarnation %d, %s %s answered %d on %s, later requests on that connection)",
						key, req.gen, req.method, req.uri, req.status, req.conn))
				}
			}
		}
		if len(repeated) > 0 || manifests != mirrorImages {
			t.Errorf("%s: %d manifests written; written again though no kill cut them: %v", name, manifests, repeated)
		}
		if want := mirrorImages * 3; blobs != want { // 2 layers and a config each
			t.Errorf("%s: %d distinct blobs uploaded, want %d", name, blobs, want)
		}
		dst.mu.Lock()
		inFlight, rejected := dst.inFlight, dst.rejected
		dst.mu.Unlock()
		// With a secret the restarted registry resumes every upload the killed one
		// began, from what reached its disk: an upload step repeated only when it
		// never arrived is accepted, and one the registry turns away (unknown or
		// finished upload, wrong offset, digest mismatch) was sent twice. Without
		// one, a restart voids the uploads in progress, so a step refused during
		// the restart and repeated is turned away rightly; those are only logged.
		if secret && len(rejected) > 0 {
			t.Errorf("%s: the registry turned away writes a correct client does not send: %v", name, rejected)
		}
		t.Logf("%s: run took %s; written again (each cut by a kill, or an error above): %d manifest(s), %d blob(s); %d write(s) in flight at the kills; %d retry line(s); rejected writes: %v; a link emptied by a kill (and written again): %v",
			name, p.ended.Sub(p.began).Round(10*time.Millisecond), again["manifest"], again["blob"], inFlight, len(retryLines(r.stdout+r.stderr)), rejected, dst.corruptedLink())
		dst.kill(t)
	}
}

// pullWhole reads the image at host/path and checks every blob against its digest.
func pullWhole(host, path string) error {
	ref, err := name.ParseReference(host + "/" + path)
	if err != nil {
		return err
	}
	img, err := remote.Image(ref)
	if err != nil {
		return fmt.Errorf("pull %s: %w", ref, err)
	}
	if err := validate.Image(img); err != nil {
		return fmt.Errorf("image %s: %w", ref, err)
	}
	return nil
}

// TestMirrorRepairsEmptiedLinks reproduces, by hand, what a SIGKILL of the real
// registry once left behind (docs/reliability.md): link files emptied in place, after
// which distribution answers every HEAD of those blobs and tags with 500 ("invalid
// checksum digest format") until they are written again. A mirror into such a
// registry must take those HEADs as absent and write the blobs and manifests again,
// which repairs the registry; before, it failed naming the blob, and so did a resume.
func TestMirrorRepairsEmptiedLinks(t *testing.T) {
	binary(t)
	src := newRegistryServer(t, false)
	groups := map[string][]string{}
	for i := range 2 {
		path := fmt.Sprintf("lab/links%d:v1", i)
		pushRandomImage(t, src.host, path)
		groups["g"] = append(groups["g"], path)
	}
	dst := startRegistryProcess(t, false)
	mirror := mirrorOnce(t, src.host, dst.host, groups)

	dst.kill(t)
	emptied := emptyLinks(t, filepath.Join(dst.dir, "data"))
	dst.start(t)
	for _, path := range groups["g"] {
		repo, ref, _ := strings.Cut(path, ":")
		u := fmt.Sprintf("http://%s/v2/%s/manifests/%s", dst.host, repo, ref)
		resp, err := http.Head(u)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusInternalServerError {
			t.Fatalf("after %d link files were emptied, HEAD %s answered %s, want 500: the registry's fault was not reproduced", emptied, u, resp.Status)
		}
	}

	r := mirror("second.db")
	if r.code != 0 {
		t.Fatalf("the mirror into a registry with %d emptied links exited %d\n%s", emptied, r.code, r.desc)
	}
	if !strings.Contains(r.stdout+r.stderr, "taken as absent, so it is written again") {
		t.Errorf("the mirror did not say which HEADs it took as absent\n%s", r.desc)
	}
	for _, path := range groups["g"] {
		if got, want := digestAt(t, dst.host, path), digestAt(t, src.host, path); got != want {
			t.Errorf("%s: target digest %s, want %s", path, got, want)
		}
		if err := pullWhole(dst.host, path); err != nil {
			t.Errorf("after the mirror: %v", err)
		}
	}
}

// mirrorOnce mirrors groups from source to target with testdata/mirror.hcl and
// returns a function that runs that mirror again with a state of the given name,
// each state a new one in the same directory.
func mirrorOnce(t *testing.T, source, target string, groups map[string][]string) func(state string) result {
	t.Helper()
	tag, dir := newTag(t), t.TempDir()
	mirror := func(state string) result {
		return runFlow(t, tag, dir, 2*time.Minute, "run", testdata(t, "mirror.hcl"), "--state", filepath.Join(dir, state),
			"--var", "source="+source, "--var", "target="+target, "--var", "groups="+hclGroups(groups))
	}
	if r := mirror("first.db"); r.code != 0 {
		t.Fatalf("first mirror exited %d\n%s", r.code, r.desc)
	}
	return mirror
}

// emptyLinks truncates, under a stopped registry's storage root, every layer link
// and every tag's current link of every repository, as a kill during their rewrite
// does, and returns how many it emptied.
func emptyLinks(t *testing.T, root string) int {
	t.Helper()
	n := 0
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != "link" {
			return err
		}
		if strings.Contains(path, "/_layers/") || strings.HasSuffix(path, "/current/link") {
			n++
			return os.Truncate(path, 0)
		}
		return nil
	})
	if err != nil || n == 0 {
		t.Fatalf("empty the links under %s: %d emptied, %v", root, n, err)
	}
	return n
}

// TestRegistryKeepsATruncatedManifest pins why TestFaultRegistryRestart takes a
// manifest the registry lost to a kill as the registry's loss (lostManifest): with
// the content of a mirrored manifest truncated in its storage, as a kill during
// its write leaves it, distribution answers the tag with 500 ("unexpected end of
// JSON input"), and a second mirror, which takes that HEAD as absent and PUTs the
// manifest again, does not repair it: the registry finds a file at the digest's
// path and keeps it.
func TestRegistryKeepsATruncatedManifest(t *testing.T) {
	binary(t)
	src := newRegistryServer(t, false)
	path := "lab/truncated:v1"
	pushRandomImage(t, src.host, path)
	groups := map[string][]string{"g": {path}}
	dst := startRegistryProcess(t, false)
	mirror := mirrorOnce(t, src.host, dst.host, groups)
	digest := digestAt(t, dst.host, path)
	dst.kill(t)
	hex := strings.TrimPrefix(digest, "sha256:")
	data := filepath.Join(dst.dir, "data", "docker", "registry", "v2", "blobs", "sha256", hex[:2], hex, "data")
	if err := os.Truncate(data, 0); err != nil {
		t.Fatal(err)
	}
	dst.start(t)
	if _, err := headDigest(dst.host, path); err == nil || !dst.lostManifest(path) {
		t.Fatalf("HEAD %s after its content was truncated: %v; want 500, unexpected end of JSON input", path, err)
	}
	if r := mirror("second.db"); r.code != 0 {
		t.Fatalf("second mirror exited %d\n%s", r.code, r.desc)
	}
	if _, err := headDigest(dst.host, path); err == nil {
		t.Errorf("the second mirror repaired the truncated manifest: TestFaultRegistryRestart can stop taking it as the registry's loss")
	}
}
