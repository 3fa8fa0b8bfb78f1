package live_test

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/flowdev/flow/engine/live"
)

type source struct{}

func (source) Status() any { return map[string]any{"run_id": 7, "status": "running"} }
func (source) Log(addr string) ([]byte, bool) {
	if addr == `exec.a["x"]` {
		return []byte("hello\n"), true
	}
	return nil, false
}

func TestServeAnswersStatusAndLogs(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	if _, err := live.Log(path, "x"); !errors.Is(err, live.ErrNotServing) {
		t.Fatalf("before Serve: err = %v, want ErrNotServing", err)
	}
	stop, err := live.Serve(path, source{})
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		RunID  int    `json:"run_id"`
		Status string `json:"status"`
	}
	if err := live.Status(path, &doc); err != nil || doc.RunID != 7 || doc.Status != "running" {
		t.Fatalf("Status = %+v, %v", doc, err)
	}
	if out, err := live.Log(path, `exec.a["x"]`); err != nil || string(out) != "hello\n" {
		t.Fatalf("Log = %q, %v", out, err)
	}
	if _, err := live.Log(path, "nope"); err == nil || errors.Is(err, live.ErrNotServing) {
		t.Fatalf("unknown address: err = %v, want a not-found answer", err)
	}
	other := filepath.Join(t.TempDir(), "state.db")
	if _, err := live.Log(other, `exec.a["x"]`); !errors.Is(err, live.ErrNotServing) {
		t.Fatalf("another state file: err = %v, want ErrNotServing", err)
	}
	stop()
	if _, err := live.Log(path, `exec.a["x"]`); !errors.Is(err, live.ErrNotServing) {
		t.Fatalf("after stop: err = %v, want ErrNotServing", err)
	}
}
