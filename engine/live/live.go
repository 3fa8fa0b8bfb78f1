// Package live lets a second terminal see a run in progress. The running flow process
// holds the state file's lock for the whole run, so `flow status`, `flow output`,
// `flow runs` and `flow logs` cannot read the file then; instead the process answers
// on a Linux abstract unix socket named after the state file's absolute path.
//
// It owns the socket, its name and the requests (a run's status, the runs, an
// instance's log); it does not own what the documents
// contain or where the values come from: the engine's session serves them while it
// holds a state file, and asks for them before it reads one (engine/session_live.go).
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
	"strconv"
	"strings"
	"time"
)

// Source answers for a running flow. Its methods are called from server goroutines
// while the run goes on, so they must be safe for concurrent use. An error is sent to
// the asking process as the answer's text.
type Source interface {
	// Status is the status document of run runID; 0 is the latest run.
	Status(runID uint64) (any, error)
	// Runs is the list of every run recorded.
	Runs() (any, error)
	// Log is what address wrote in run runID (0: the latest run).
	Log(runID uint64, address string) ([]byte, error)
}

// ErrNotServing means no flow process answers for that state file.
var ErrNotServing = errors.New("no running flow process answers for this state file")

// ErrAnswer wraps what the running flow process answered instead of a document: the
// Source's error.
var ErrAnswer = errors.New("the running flow process answers")

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

// Serve answers status and log requests for statePath until stop is called, to
// processes of the same user (or root) only.
func Serve(statePath string, src Source) (stop func(), err error) {
	ln, err := net.Listen("unix", socketName(statePath))
	if err != nil {
		return nil, fmt.Errorf("listen for status requests: %w", err)
	}
	ln = newOwnerOnly(ln)
	mux := http.NewServeMux()
	answer := func(w http.ResponseWriter, v any, err error) {
		if err != nil {
			http.Error(w, err.Error(), http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(v)
	}
	mux.HandleFunc("/status", func(w http.ResponseWriter, r *http.Request) {
		id, err := runParam(r)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		v, err := src.Status(id)
		answer(w, v, err)
	})
	mux.HandleFunc("/runs", func(w http.ResponseWriter, _ *http.Request) {
		v, err := src.Runs()
		answer(w, v, err)
	})
	mux.HandleFunc("/logs", func(w http.ResponseWriter, r *http.Request) {
		id, err := runParam(r)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		b, err := src.Log(id, r.URL.Query().Get("address"))
		if err != nil {
			http.Error(w, err.Error(), http.StatusNotFound)
			return
		}
		w.Write(b)
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	// Close the listener itself too: Serve may not have started tracking it yet.
	return func() { srv.Close(); ln.Close() }, nil
}

// runParam is the request's run id; absent, 0.
func runParam(r *http.Request) (uint64, error) {
	s := r.URL.Query().Get("run")
	if s == "" {
		return 0, nil
	}
	id, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("invalid run id %q", s)
	}
	return id, nil
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

// Status decodes the running process's status document of run runID (0: the
// latest, the one in progress) into out.
func Status(statePath string, runID uint64, out any) error {
	body, err := get(statePath, "/status?run="+strconv.FormatUint(runID, 10))
	if err != nil {
		return err
	}
	return json.Unmarshal(body, out)
}

// Runs decodes the running process's list of runs into out.
func Runs(statePath string, out any) error {
	body, err := get(statePath, "/runs")
	if err != nil {
		return err
	}
	return json.Unmarshal(body, out)
}

// Log returns the output address wrote in run runID (0: the latest; for the run in
// progress, what it captured so far).
func Log(statePath string, runID uint64, address string) ([]byte, error) {
	return get(statePath, "/logs?run="+strconv.FormatUint(runID, 10)+"&address="+url.QueryEscape(address))
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
		return nil, fmt.Errorf("%w: %s", ErrAnswer, strings.TrimSpace(string(body)))
	}
	return body, nil
}
