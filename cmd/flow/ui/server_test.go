package ui

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestTaskOf(t *testing.T) {
	for addr, want := range map[string]string{
		"exec.x":                            "exec.x",
		`exec.x["k"]`:                       "exec.x",
		`exec.x["a.b[c]"]`:                  "exec.x",
		"exec.x[0]":                         "exec.x",
		`module.m["a"].exec.x`:              `module.m["a"].exec.x`,
		`module.m["a"].exec.x["k"]`:         `module.m["a"].exec.x`,
		`module.a["k"].module.b.lxd.y["z"]`: `module.a["k"].module.b.lxd.y`,
	} {
		if got := TaskOf(addr); got != want {
			t.Errorf("TaskOf(%s) = %s, want %s", addr, got, want)
		}
	}
}

func TestLoopbackOnly(t *testing.T) {
	h := New(fixed{&Detail{Instances: []Instance{}}}).Handler(true)
	for host, want := range map[string]int{
		"127.0.0.1:8470": http.StatusOK, "localhost:8470": http.StatusOK, "[::1]:8470": http.StatusOK,
		"evil.example:8470": http.StatusForbidden, "10.0.0.1:8470": http.StatusForbidden,
	} {
		r := httptest.NewRequest("GET", "/api/runs", nil)
		r.Host = host
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != want {
			t.Errorf("Host %s: %d, want %d", host, w.Code, want)
		}
	}
}

func TestListenInUse(t *testing.T) {
	ln, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, err = Listen(ln.Addr().String())
	var inUse *InUseError
	if !errors.As(err, &inUse) || !strings.Contains(err.Error(), ln.Addr().String()+" is in use") {
		t.Errorf("second Listen on %s: %v, want an InUseError naming it", ln.Addr(), err)
	}
}

// moving is a Source whose one run changes as a test says.
type moving struct {
	mu sync.Mutex
	d  Detail
}

func (m *moving) Runs() ([]Run, error) { return []Run{m.d.Run}, nil }
func (m *moving) Detail(uint64) (*Detail, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	cp := m.d
	cp.Instances = append([]Instance(nil), m.d.Instances...)
	return &cp, nil
}
func (m *moving) Log(uint64, string) ([]byte, error) { return nil, nil }

// TestEvents: the stream sends the whole run, then only what changed.
func TestEvents(t *testing.T) {
	src := &moving{d: Detail{Run: Run{ID: 1, Status: "running"}, Live: true,
		Instances: []Instance{{Address: "exec.a", Status: "running"}, {Address: "exec.b", Status: "pending"}}}}
	s := New(src)
	s.Every = 20 * time.Millisecond
	srv := httptest.NewServer(s.Handler(true))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/api/events", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	events := readEvents(resp.Body)
	ev := <-events
	var first Detail
	if ev[0] != "run" || json.Unmarshal([]byte(ev[1]), &first) != nil || len(first.Instances) != 2 {
		t.Fatalf("first event %v, want the whole run", ev)
	}
	src.mu.Lock()
	src.d.Instances[0].Status = "succeeded"
	src.mu.Unlock()
	ev = <-events
	var u update
	if ev[0] != "update" || json.Unmarshal([]byte(ev[1]), &u) != nil || len(u.Instances) != 1 || u.Instances[0].Status != "succeeded" {
		t.Fatalf("after exec.a succeeded: %v, want an update of exec.a alone", ev)
	}
}

func readEvents(r io.Reader) <-chan [2]string {
	out := make(chan [2]string, 10)
	go func() {
		sc := bufio.NewScanner(r)
		sc.Buffer(nil, 1<<20)
		var name string
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "event: "):
				name = line[7:]
			case strings.HasPrefix(line, "data: "):
				out <- [2]string{name, line[6:]}
			}
		}
		close(out)
	}()
	return out
}

func TestPause(t *testing.T) {
	for _, tt := range []struct{ took, want time.Duration }{
		{time.Millisecond, 500 * time.Millisecond},
		{25 * time.Millisecond, 500 * time.Millisecond},
		{100 * time.Millisecond, 2 * time.Second},
	} {
		if got := pause(500*time.Millisecond, tt.took); got != tt.want {
			t.Errorf("a read of %s: pause %s, want %s", tt.took, got, tt.want)
		}
	}
}
