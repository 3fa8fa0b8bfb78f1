package wait

import (
	"context"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/flowdev/flow/tasks/internal/output"
)

func serve(t *testing.T, h http.HandlerFunc) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

// notReadyFor answers 503 to the first n requests, then calls ready.
func notReadyFor(n int64, ready http.HandlerFunc) http.HandlerFunc {
	var count atomic.Int64
	return func(w http.ResponseWriter, r *http.Request) {
		if count.Add(1) <= n {
			http.Error(w, "starting", http.StatusServiceUnavailable)
			return
		}
		ready(w, r)
	}
}

func reply(status int, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(status)
		_, _ = fmt.Fprint(w, body)
	}
}

func TestHTTP(t *testing.T) {
	tests := []struct {
		name       string
		handler    http.HandlerFunc
		wait       WaitReady // kind and url are filled in
		wantStatus int
		wantBody   string
	}{
		{name: "200", handler: reply(200, "ok"), wantStatus: 200, wantBody: "ok"},
		{name: "expected status", handler: reply(204, ""), wait: WaitReady{ExpectStatus: []int{200, 204}}, wantStatus: 204},
		{name: "body regex", handler: reply(200, "\n  {\"status\": \"ready\"}\n"), wait: WaitReady{BodyMatch: `"status":\s*"ready"`},
			wantStatus: 200, wantBody: `{"status": "ready"}`},
		{name: "503 then 200", handler: notReadyFor(3, reply(200, "up")), wantStatus: 200, wantBody: "up"},
		{name: "wrong body then right", handler: notReadyFor(2, reply(200, "ok")), wait: WaitReady{BodyMatch: "^ok$"},
			wantStatus: 200, wantBody: "ok"},
		{name: "headers and host", handler: func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Authorization") != "Bearer t0k" || r.Host != "api.example" {
				http.Error(w, "who?", http.StatusUnauthorized)
				return
			}
			_, _ = fmt.Fprint(w, "hello")
		}, wait: WaitReady{Headers: map[string]string{"Authorization": "Bearer t0k", "host": "api.example"}},
			wantStatus: 200, wantBody: "hello"},
		{name: "redirect followed", handler: func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/healthz" {
				http.Redirect(w, r, "/healthz", http.StatusFound)
				return
			}
			_, _ = fmt.Fprint(w, "fine")
		}, wantStatus: 200, wantBody: "fine"},
		{name: "body capped at 64 KiB", handler: reply(200, strings.Repeat("x", 100<<10)), wait: WaitReady{BodyMatch: "^x+$"},
			wantStatus: 200, wantBody: strings.Repeat("x", output.CaptureLimit)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := serve(t, tt.handler)
			w := tt.wait
			w.Kind, w.URL, w.Interval = "http", srv.URL+"/", "20ms"
			out, stdout, err := run(context.Background(), t, &w)
			if err != nil {
				t.Fatalf("Run: %v\n%s", err, stdout)
			}
			if got := outNumber(t, out, "status"); got != float64(tt.wantStatus) {
				t.Errorf("status = %v, want %d", got, tt.wantStatus)
			}
			if got := outString(t, out, "body"); got != tt.wantBody {
				t.Errorf("body = %.80q, want %.80q", got, tt.wantBody)
			}
			if e := outNumber(t, out, "elapsed"); e < 0 || e > 2 {
				t.Errorf("elapsed = %v, want under 2 s", e)
			}
			if !strings.Contains(stdout, srv.URL+"/ ready after ") {
				t.Errorf("stdout lacks the ready line:\n%s", stdout)
			}
		})
	}
}

func TestHTTPTimeout(t *testing.T) {
	tests := []struct {
		name     string
		handler  http.HandlerFunc
		wait     WaitReady
		wantLast string
	}{
		{"status", reply(503, "starting"), WaitReady{}, "status 503"},
		{"unexpected status", reply(200, "ok"), WaitReady{ExpectStatus: []int{204}}, "status 200"},
		{"body", reply(200, "  starting\n"), WaitReady{BodyMatch: "^ok$"}, `status 200, body "starting" does not match "^ok$"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := serve(t, tt.handler)
			w := tt.wait
			w.Kind, w.URL, w.Interval = "http", srv.URL+"/", "50ms"
			if w.WaitTimeout == "" {
				w.WaitTimeout = "1s" // room for a loaded machine's first answer
			}
			out, _, err := run(context.Background(), t, &w)
			want := "wait for " + srv.URL + "/: not ready after 1s: last " + tt.wantLast
			if err == nil || err.Error() != want {
				t.Fatalf("Run error = %v, want %q", err, want)
			}
			if out != nil {
				t.Errorf("outputs = %v, want nil", out)
			}
		})
	}
}

// Credentials in the URL never reach messages.
func TestHTTPRedactsURL(t *testing.T) {
	srv := serve(t, reply(503, ""))
	url := strings.Replace(srv.URL, "http://", "http://user:s3cret@", 1) + "/"
	_, stdout, err := run(context.Background(), t, &WaitReady{Kind: "http", URL: url, Interval: "50ms", WaitTimeout: "100ms"})
	if err == nil || strings.Contains(err.Error()+stdout, "s3cret") || !strings.Contains(err.Error(), "user:xxxxx@") {
		t.Errorf("error %v and stdout %q must name the URL without its password", err, stdout)
	}
}

func writeCA(t *testing.T, srv *httptest.Server) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ca.pem")
	block := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	if err := os.WriteFile(path, block, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestHTTPS(t *testing.T) {
	srv := httptest.NewUnstartedServer(reply(200, "secure"))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // failed handshakes are expected
	srv.StartTLS()
	t.Cleanup(srv.Close)
	notPEM := filepath.Join(t.TempDir(), "ca.txt")
	if err := os.WriteFile(notPEM, []byte("not a certificate\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(t.TempDir(), "missing.pem")
	tests := []struct {
		name    string
		wait    WaitReady
		wantErr string // "" means ready
	}{
		// 3 s, not 300 ms: a loaded machine took longer than 300 ms for the first
		// handshake, and the wait then ended with "no answer" instead of the TLS error.
		{name: "verification fails", wait: WaitReady{WaitTimeout: "3s"},
			wantErr: ": not ready after 3s: last error: tls: failed to verify certificate: x509: certificate signed by unknown authority"},
		{name: "insecure", wait: WaitReady{Insecure: boolPtr(true)}},
		{name: "ca_file", wait: WaitReady{CAFile: writeCA(t, srv)}},
		{name: "ca_file missing", wait: WaitReady{CAFile: missing},
			wantErr: ": read ca_file: open " + missing + ": no such file or directory"},
		{name: "ca_file without certificates", wait: WaitReady{CAFile: notPEM},
			wantErr: ": ca_file " + notPEM + ": no PEM certificates found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := tt.wait
			w.Kind, w.URL, w.Interval = "http", srv.URL+"/", "50ms"
			if w.WaitTimeout == "" {
				w.WaitTimeout = "300ms"
			}
			out, _, err := run(context.Background(), t, &w)
			if tt.wantErr != "" {
				if want := "wait for " + srv.URL + "/" + tt.wantErr; err == nil || err.Error() != want {
					t.Fatalf("Run error = %v, want %q", err, want)
				}
				return
			}
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if got := outString(t, out, "body"); got != "secure" {
				t.Errorf("body = %q, want %q", got, "secure")
			}
		})
	}
}
