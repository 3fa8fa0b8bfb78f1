package ui

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"
)

//go:embed assets
var assets embed.FS

// DefaultListen is where `flow ui` listens unless told otherwise: loopback only.
const DefaultListen = "127.0.0.1:8470"

// Server serves the page and its documents over a Source.
//
// The zero Server is not usable; New makes one. Its handler may be used by many
// requests at once.
type Server struct {
	src Source
	// Every is how often an open page's events stream asks the Source for changes.
	Every time.Duration
	mux   *http.ServeMux
}

// New returns a Server over src.
func New(src Source) *Server {
	s := &Server{src: src, Every: 500 * time.Millisecond, mux: http.NewServeMux()}
	static, _ := fs.Sub(assets, "assets")
	s.mux.Handle("GET /", http.FileServerFS(static))
	s.mux.HandleFunc("GET /api/runs", s.runs)
	s.mux.HandleFunc("GET /api/run", s.detail)
	s.mux.HandleFunc("GET /api/log", s.log)
	s.mux.HandleFunc("GET /api/history", s.history)
	s.mux.HandleFunc("GET /api/events", s.events)
	return s
}

// InUseError is a Listen refused because another process (a second flow ui) has the
// address.
type InUseError struct{ Addr string }

func (e *InUseError) Error() string {
	return fmt.Sprintf("%s is in use (another flow ui?): choose another address with --listen", e.Addr)
}

// Listen opens addr, refusing one in use with an *InUseError.
func Listen(addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if errors.Is(err, syscall.EADDRINUSE) {
		return nil, &InUseError{Addr: addr}
	}
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", addr, err)
	}
	return ln, nil
}

// Serve answers on ln until ctx ends.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{Handler: s.Handler(loopback(ln.Addr())), ReadHeaderTimeout: 5 * time.Second,
		BaseContext: func(net.Listener) context.Context { return ctx }}
	go func() { <-ctx.Done(); srv.Close() }()
	err := srv.Serve(ln)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Handler is the server's handler. With loopbackOnly, a request naming another host
// than a loopback one is refused: a web page elsewhere cannot reach the UI through a
// name it resolves to 127.0.0.1 (DNS rebinding).
func (s *Server) Handler(loopbackOnly bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if loopbackOnly && !loopbackHost(r.Host) {
			http.Error(w, "flow ui answers on a loopback address only", http.StatusForbidden)
			return
		}
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Content-Security-Policy", "default-src 'self'; style-src 'self' 'unsafe-inline'")
		s.mux.ServeHTTP(w, r)
	})
}

func loopback(a net.Addr) bool {
	t, ok := a.(*net.TCPAddr)
	return ok && t.IP.IsLoopback()
}

func loopbackHost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func runID(r *http.Request) (uint64, error) {
	v := r.URL.Query().Get("run")
	if v == "" {
		return 0, nil
	}
	id, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("invalid run id %q", v)
	}
	return id, nil
}

func writeJSON(w http.ResponseWriter, v any, err error) {
	if err != nil {
		http.Error(w, err.Error(), http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	json.NewEncoder(w).Encode(v)
}

func (s *Server) runs(w http.ResponseWriter, _ *http.Request) {
	runs, err := s.src.Runs()
	if runs == nil {
		runs = []Run{}
	}
	writeJSON(w, runs, err)
}

func (s *Server) detail(w http.ResponseWriter, r *http.Request) {
	id, err := runID(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	d, err := s.read(id)
	writeJSON(w, d, err)
}

// read is run id's detail. A destroy run's records do not carry the edges: they are
// those of the run it undoes, which the page draws the destroy with.
func (s *Server) read(id uint64) (*Detail, error) {
	d, err := s.src.Detail(id)
	if err != nil || d.Run.Destroys == 0 {
		return d, err
	}
	missing := false
	for _, in := range d.Instances {
		missing = missing || !in.DepsKnown
	}
	if !missing {
		return d, nil
	}
	undone, err := s.src.Detail(d.Run.Destroys)
	if err != nil {
		return d, nil // drawn without edges
	}
	deps := make(map[string]*Instance, len(undone.Instances))
	for i := range undone.Instances {
		deps[undone.Instances[i].Address] = &undone.Instances[i]
	}
	cp := *d
	cp.Instances = make([]Instance, len(d.Instances))
	for i, in := range d.Instances {
		if u := deps[in.Address]; u != nil && !in.DepsKnown {
			in.Deps, in.DepsKnown = u.Deps, u.DepsKnown
		}
		cp.Instances[i] = in
	}
	return &cp, nil
}

func (s *Server) log(w http.ResponseWriter, r *http.Request) {
	id, err := runID(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	out, err := s.src.Log(id, r.URL.Query().Get("address"))
	if err != nil {
		http.Error(w, err.Error(), http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Write(out)
}
