package ui

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// routes are every path the server answers.
var routes = []string{"/", "/index.html", "/app.js", "/app.css", "/favicon.svg", "/api/runs", "/api/run", "/api/log?address=exec.a",
	"/api/history", "/api/events", "/api/live"}

// TestOnlyGet: the page is read-only; no route takes another method.
func TestOnlyGet(t *testing.T) {
	h := New(fixed{&Detail{Instances: []Instance{}}}).Handler(true)
	for _, route := range routes {
		for _, method := range []string{"POST", "PUT", "DELETE", "PATCH"} {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second) // a stream that answered ends
			r := httptest.NewRequestWithContext(ctx, method, route, strings.NewReader("x"))
			r.Host = "127.0.0.1:8470"
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			cancel()
			if w.Code != http.StatusMethodNotAllowed {
				t.Errorf("%s %s: %d, want 405", method, route, w.Code)
			}
		}
	}
}

// TestSecurityHeaders: every answer carries the content security policy that keeps
// any script but the page's own from running, and nosniff.
func TestSecurityHeaders(t *testing.T) {
	h := New(fixed{&Detail{Instances: []Instance{}}}).Handler(true)
	for _, route := range routes {
		if route == "/api/events" || route == "/api/live" {
			continue // streams: the headers are checked on the page's files and documents
		}
		r := httptest.NewRequest("GET", route, nil)
		r.Host = "127.0.0.1:8470"
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		csp := w.Header().Get("Content-Security-Policy")
		if !strings.Contains(csp, "default-src 'self'") || strings.Contains(csp, "script-src") || strings.Contains(csp, "unsafe-eval") {
			t.Errorf("GET %s: Content-Security-Policy %q, want default-src 'self' and no script exceptions", route, csp)
		}
		if w.Header().Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("GET %s: no X-Content-Type-Options: nosniff", route)
		}
	}
}

// TestToken: on an address other than loopback, a request without the token is
// refused, a foreign Host is refused even with it, and the URL printed sets an
// HttpOnly, SameSite=Strict cookie that then admits the page.
func TestToken(t *testing.T) {
	s := New(fixed{&Detail{Instances: []Instance{}}})
	// Secure as for 0.0.0.0: a listener that is not on loopback.
	url, err := s.Secure(fakeListener{&net.TCPAddr{IP: net.IPv4zero, Port: 8470}}, "")
	if err != nil {
		t.Fatal(err)
	}
	if s.Token == "" || len(s.Token) < 32 || !strings.Contains(url, "?token="+s.Token) || strings.Contains(url, "0.0.0.0") || strings.Contains(url, "[::]") {
		t.Fatalf("Secure on 0.0.0.0: URL %s, token %q; want a URL a browser can open, with a long token", url, s.Token)
	}
	h := s.Handler(false)
	get := func(path, host string, cookie *http.Cookie) *httptest.ResponseRecorder {
		r := httptest.NewRequest("GET", path, nil)
		r.Host = host
		if cookie != nil {
			r.AddCookie(cookie)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	if w := get("/api/log?address=exec.a", "127.0.0.1:8470", nil); w.Code != http.StatusUnauthorized {
		t.Errorf("no token: %d, want 401", w.Code)
	}
	if w := get("/?token=wrong", "127.0.0.1:8470", nil); w.Code != http.StatusUnauthorized {
		t.Errorf("a wrong token: %d, want 401", w.Code)
	}
	if w := get("/?token="+s.Token, "evil.example:8470", nil); w.Code != http.StatusForbidden {
		t.Errorf("Host evil.example with the token: %d, want 403", w.Code)
	}
	w := get("/?view=timeline&token="+s.Token, "127.0.0.1:8470", nil)
	res := w.Result()
	if w.Code != http.StatusSeeOther || res.Header.Get("Location") != "/?view=timeline" || len(res.Cookies()) != 1 {
		t.Fatalf("the printed URL: %d to %q with cookies %v, want a redirect without the token that sets the cookie", w.Code, res.Header.Get("Location"), res.Cookies())
	}
	c := res.Cookies()[0]
	if !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Value != s.Token {
		t.Errorf("cookie %+v, want the token, HttpOnly and SameSite=Strict", c)
	}
	if w := get("/api/log?address=exec.a", "127.0.0.1:8470", c); w.Code != http.StatusOK || w.Body.String() != "output\n" {
		t.Errorf("with the cookie: %d %q, want the log", w.Code, w.Body.String())
	}
	if w := get("/api/log?address=exec.a", "evil.example:8470", c); w.Code != http.StatusForbidden {
		t.Errorf("with the cookie, Host evil.example: %d, want 403", w.Code)
	}
	if w := get("/api/runs", "127.0.0.1:8470", &http.Cookie{Name: c.Name, Value: "x" + s.Token[1:]}); w.Code != http.StatusUnauthorized {
		t.Errorf("a wrong cookie: %d, want 401", w.Code)
	}
}

type fakeListener struct{ addr net.Addr }

func (f fakeListener) Accept() (net.Conn, error) { return nil, net.ErrClosed }
func (f fakeListener) Close() error              { return nil }
func (f fakeListener) Addr() net.Addr            { return f.addr }

// TestLive: the page's WebSocket stream sends the whole run, then what changed, and
// refuses a page of another origin.
func TestLive(t *testing.T) {
	src := &moving{d: Detail{Run: Run{ID: 1, Status: "running"}, Live: true,
		Instances: []Instance{{Address: "exec.a", Status: "running"}, {Address: "exec.b", Status: "pending"}}}}
	s := New(src)
	s.Every = 20 * time.Millisecond
	srv := httptest.NewServer(s.Handler(true))
	defer srv.Close()
	wsURL := "ws" + strings.TrimPrefix(srv.URL, "http") + "/api/live?run=0"
	if _, resp, err := websocket.DefaultDialer.Dial(wsURL, http.Header{"Origin": {"http://evil.example"}}); err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("a page of another origin connected: %v", err)
	}
	conn, _, err := websocket.DefaultDialer.Dial(wsURL, http.Header{"Origin": {srv.URL}})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	var first struct {
		Event string
		Data  Detail
	}
	if err := conn.ReadJSON(&first); err != nil || first.Event != "run" || len(first.Data.Instances) != 2 {
		t.Fatalf("first message %+v (%v), want the whole run", first, err)
	}
	src.mu.Lock()
	src.d.Instances[0].Status = "succeeded"
	src.mu.Unlock()
	var next struct {
		Event string
		Data  json.RawMessage
	}
	if err := conn.ReadJSON(&next); err != nil {
		t.Fatal(err)
	}
	var u update
	if next.Event != "update" || json.Unmarshal(next.Data, &u) != nil || len(u.Instances) != 1 || u.Instances[0].Status != "succeeded" {
		t.Fatalf("after exec.a succeeded: %s %s, want an update of exec.a alone", next.Event, next.Data)
	}
}

// counting is a Source that counts the reads of a run.
type counting struct {
	moving
	mu    sync.Mutex
	reads int
}

func (c *counting) Detail(id uint64) (*Detail, error) {
	c.mu.Lock()
	c.reads++
	c.mu.Unlock()
	return c.moving.Detail(id)
}

// TestStreamsShareReads: ten pages open on a run cost the Source about the reads of
// one, not ten times as many.
func TestStreamsShareReads(t *testing.T) {
	src := &counting{moving: moving{d: Detail{Run: Run{ID: 1, Status: "running"}, Live: true,
		Instances: []Instance{{Address: "exec.a", Status: "running"}}}}}
	s := New(src)
	s.Every = 40 * time.Millisecond
	srv := httptest.NewServer(s.Handler(true))
	defer srv.Close()
	wsURL := "ws" + strings.TrimPrefix(srv.URL, "http") + "/api/live"
	const pages = 10
	for range pages {
		conn, _, err := websocket.DefaultDialer.Dial(wsURL, http.Header{"Origin": {srv.URL}})
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
	}
	src.mu.Lock()
	src.reads = 0
	src.mu.Unlock()
	time.Sleep(800 * time.Millisecond) // 20 periods
	src.mu.Lock()
	reads := src.reads
	src.mu.Unlock()
	// Each stream reads every 40ms: 200 reads unshared; shared, about one per 40ms.
	if reads > 40 {
		t.Errorf("%d pages open for 20 periods read the run %d times, want them to share reads (at most 40)", pages, reads)
	}
}

// TestTaskSpanFromFirstAttempt: a task's duration across runs counts from its first
// attempt, a failed one included.
func TestTaskSpanFromFirstAttempt(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 1, 0, 0, 0, time.UTC)
	at := func(s int) *time.Time { v := t0.Add(time.Duration(s) * time.Second); return &v }
	spans := taskSpans([]Instance{{Address: "exec.flaky", StartedAt: at(4), FinishedAt: at(7),
		Tries: []Try{{StartedAt: *at(0), FinishedAt: *at(3), Error: "exit 1"}}}})
	if spans["exec.flaky"] != 7 {
		t.Errorf("exec.flaky's span: %vs, want 7s (from its first attempt)", spans["exec.flaky"])
	}
}
