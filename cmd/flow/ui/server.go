package ui

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
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
	// Token, when set, is the secret every request must carry: in the cookie the page
	// gets when it is opened with ?token=TOKEN (the URL printed once). Hosts are the
	// names and addresses a request may name in its Host besides loopback ones. Secure
	// sets both for a listener that is not on loopback.
	Token string
	Hosts []string
	mux   *http.ServeMux

	sharedMu sync.Mutex
	shared   map[uint64]*sharedRead // the streams' latest read of each run
}

// New returns a Server over src.
func New(src Source) *Server {
	s := &Server{src: src, Every: 500 * time.Millisecond, mux: http.NewServeMux(), shared: map[uint64]*sharedRead{}}
	static, _ := fs.Sub(assets, "assets")
	s.mux.Handle("GET /", http.FileServerFS(static))
	s.mux.HandleFunc("GET /api/runs", s.runs)
	s.mux.HandleFunc("GET /api/run", s.detail)
	s.mux.HandleFunc("GET /api/log", s.log)
	s.mux.HandleFunc("GET /api/history", s.history)
	s.mux.HandleFunc("GET /api/events", s.events)
	s.mux.HandleFunc("GET /api/live", s.live)
	return s
}

// InUseError is a Listen refused because another process (a second flow ui) has the
// address.
type InUseError struct{ Addr string }

func (e *InUseError) Error() string {
	return fmt.Sprintf("%s is in use (another flow ui?): choose another address with --listen", e.Addr)
}

// Listen opens addr, refusing one in use with an *InUseError. An IPv4 address (0.0.0.0
// too) is listened on over IPv4 only.
func Listen(addr string) (net.Listener, error) {
	network := "tcp"
	if h, _, err := net.SplitHostPort(addr); err == nil {
		if ip := net.ParseIP(h); ip != nil && ip.To4() != nil {
			network = "tcp4"
		}
	}
	ln, err := net.Listen(network, addr)
	if errors.Is(err, syscall.EADDRINUSE) {
		return nil, &InUseError{Addr: addr}
	}
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", addr, err)
	}
	return ln, nil
}

// Secure readies s for ln and returns the URL to open: on loopback, the address;
// elsewhere, s gets a new Token and the Hosts a browser may name (host, the name
// --listen gave, when not an address; the machine's name; for an unspecified address
// every address of the machine, else the one listened on), and the URL, which carries
// the token, names host or an address of the machine a browser can open (never
// 0.0.0.0 or [::]).
func (s *Server) Secure(ln net.Listener, host string) (string, error) {
	t, ok := ln.Addr().(*net.TCPAddr)
	if !ok || t.IP.IsLoopback() {
		return "http://" + ln.Addr().String() + "/", nil
	}
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	s.Token = hex.EncodeToString(b)
	shown := ""
	if host != "" && net.ParseIP(strings.Trim(host, "[]")) == nil {
		s.Hosts = append(s.Hosts, host)
		shown = host
	}
	if name, err := os.Hostname(); err == nil && name != "" {
		s.Hosts = append(s.Hosts, name)
	}
	if t.IP.IsUnspecified() {
		addrs, _ := net.InterfaceAddrs()
		for _, a := range addrs {
			ipn, ok := a.(*net.IPNet)
			if !ok || (t.IP.To4() != nil && ipn.IP.To4() == nil) {
				continue
			}
			s.Hosts = append(s.Hosts, ipn.IP.String())
			if shown == "" && ipn.IP.IsGlobalUnicast() && !ipn.IP.IsLinkLocalUnicast() {
				shown = ipn.IP.String()
			}
		}
		if shown == "" {
			shown = "127.0.0.1"
		}
	} else {
		s.Hosts = append(s.Hosts, t.IP.String())
		if shown == "" {
			shown = t.IP.String()
		}
	}
	return "http://" + net.JoinHostPort(shown, strconv.Itoa(t.Port)) + "/?token=" + s.Token, nil
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

// Handler is the server's handler. With loopbackOnly or a Token, a request naming
// another host than a loopback one or one of Hosts is refused: a web page elsewhere
// cannot reach the UI through a name it resolves to the machine (DNS rebinding). With
// a Token, a request without it is refused too.
func (s *Server) Handler(loopbackOnly bool) http.Handler {
	hosts := map[string]bool{}
	for _, h := range s.Hosts {
		hosts[strings.ToLower(strings.Trim(h, "[]"))] = true
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if (loopbackOnly || s.Token != "") && !loopbackHost(r.Host) && !hosts[hostOf(r.Host)] {
			http.Error(w, "flow ui does not answer for this host name", http.StatusForbidden)
			return
		}
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Content-Security-Policy", csp)
		w.Header().Set("Referrer-Policy", "no-referrer")
		if s.Token != "" && !s.admit(w, r) {
			return
		}
		s.mux.ServeHTTP(w, r)
	})
}

// csp lets the page load only its own files and connect only to its own server.
const csp = "default-src 'self'; style-src 'self' 'unsafe-inline'; frame-ancestors 'none'"

// admit reports whether r carries the token: its cookie, or ?token=, which sets the
// cookie and sends the browser to the URL without it. It answered r when not.
func (s *Server) admit(w http.ResponseWriter, r *http.Request) bool {
	name := "flow_ui_token"
	if _, port, err := net.SplitHostPort(r.Host); err == nil {
		name += "_" + port // one per flow ui on the machine
	}
	if c, err := r.Cookie(name); err == nil && subtle.ConstantTimeCompare([]byte(c.Value), []byte(s.Token)) == 1 {
		return true
	}
	q := r.URL.Query()
	if t := q.Get("token"); t != "" && subtle.ConstantTimeCompare([]byte(t), []byte(s.Token)) == 1 {
		http.SetCookie(w, &http.Cookie{Name: name, Value: s.Token, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
		q.Del("token")
		u := *r.URL
		u.RawQuery = q.Encode()
		http.Redirect(w, r, u.RequestURI(), http.StatusSeeOther)
		return false
	}
	http.Error(w, "flow ui: open the URL flow ui printed (it carries the token)", http.StatusUnauthorized)
	return false
}

func hostOf(host string) string {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	return strings.ToLower(strings.Trim(host, "[]"))
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
