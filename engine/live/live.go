// Package live lets a second terminal see a run in progress. The running flow process
// holds the state file's lock for the whole run, so `flow status` and `flow logs`
// cannot read the file then; instead the process answers on a Linux abstract unix
// socket named after the state file's absolute path.
//
// It owns the socket, its name and the two requests; it does not own what a status
// document contains (the CLI renders it) or where the values come from.
package live

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"time"
)

// Source answers for a running flow. Both methods are called from server goroutines
// while the run goes on, so they must be safe for concurrent use.
type Source interface {
	Status() any
	Log(address string) ([]byte, bool)
}

// ErrNotServing means no flow process answers for that state file.
var ErrNotServing = errors.New("no running flow process answers for this state file")

// socketName is an abstract socket (leading NUL, shown as @): nothing on disk to clean
// up after a SIGKILL, and no path-length limit.
func socketName(statePath string) string {
	abs, err := filepath.Abs(statePath)
	if err != nil {
		abs = statePath
	}
	sum := sha256.Sum256([]byte(abs))
	return "@flow-" + hex.EncodeToString(sum[:12])
}

// Serve answers status and log requests for statePath until stop is called.
func Serve(statePath string, src Source) (stop func(), err error) {
	ln, err := net.Listen("unix", socketName(statePath))
	if err != nil {
		return nil, fmt.Errorf("listen for status requests: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/status", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(src.Status())
	})
	mux.HandleFunc("/logs", func(w http.ResponseWriter, r *http.Request) {
		b, ok := src.Log(r.URL.Query().Get("address"))
		if !ok {
			http.Error(w, "no such instance", http.StatusNotFound)
			return
		}
		w.Write(b)
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	// Close the listener itself too: Serve may not have started tracking it yet.
	return func() { srv.Close(); ln.Close() }, nil
}

func client(statePath string) *http.Client {
	name := socketName(statePath)
	return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", name)
		},
	}}
}

// Status decodes the running process's status document into out.
func Status(statePath string, out any) error {
	body, err := get(statePath, "/status")
	if err != nil {
		return err
	}
	return json.Unmarshal(body, out)
}

// Log returns the output captured so far for address.
func Log(statePath, address string) ([]byte, error) {
	return get(statePath, "/logs?address="+url.QueryEscape(address))
}

func get(statePath, path string) ([]byte, error) {
	resp, err := client(statePath).Get("http://flow" + path)
	if err != nil {
		return nil, ErrNotServing
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("read status answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("running flow process: %s", string(body))
	}
	return body, nil
}
