package live_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowdev/flow/engine/live"
)

type source struct{}

func (source) Status(runID uint64) (any, error) {
	switch runID {
	case 0, 7:
		return map[string]any{"run_id": 7, "status": "running"}, nil
	case 3:
		return map[string]any{"run_id": 3, "status": "failed"}, nil
	}
	return nil, fmt.Errorf("run %d not found", runID)
}

func (source) Runs() (any, error) {
	return []map[string]any{{"id": 3, "status": "failed"}, {"id": 7, "status": "running"}}, nil
}

func (source) Log(runID uint64, addr string) ([]byte, error) {
	if addr == `exec.a["x"]` && (runID == 0 || runID == 7) {
		return []byte("hello\n"), nil
	}
	if addr == `exec.a["x"]` && runID == 3 {
		return []byte("earlier\n"), nil
	}
	return nil, fmt.Errorf("run %d has no task instance %s", runID, addr)
}

type doc struct {
	RunID  int    `json:"run_id"`
	Status string `json:"status"`
}

func TestServeAnswersStatusRunsAndLogs(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	if _, err := live.Log(path, 0, "x"); !errors.Is(err, live.ErrNotServing) {
		t.Fatalf("before Serve: err = %v, want ErrNotServing", err)
	}
	stop, err := live.Serve(path, source{})
	if err != nil {
		t.Fatal(err)
	}
	var d doc
	if err := live.Status(path, 0, &d); err != nil || d.RunID != 7 || d.Status != "running" {
		t.Fatalf("Status(0) = %+v, %v", d, err)
	}
	if err := live.Status(path, 3, &d); err != nil || d.RunID != 3 || d.Status != "failed" {
		t.Fatalf("Status(3) = %+v, %v", d, err)
	}
	if err := live.Status(path, 9, &d); !errors.Is(err, live.ErrAnswer) || !strings.Contains(err.Error(), "run 9 not found") {
		t.Fatalf("Status(9): err = %v, want the source's answer", err)
	}
	var runs []struct {
		ID     int    `json:"id"`
		Status string `json:"status"`
	}
	if err := live.Runs(path, &runs); err != nil || len(runs) != 2 || runs[1].ID != 7 || runs[1].Status != "running" {
		t.Fatalf("Runs = %+v, %v", runs, err)
	}
	if out, err := live.Log(path, 0, `exec.a["x"]`); err != nil || string(out) != "hello\n" {
		t.Fatalf("Log = %q, %v", out, err)
	}
	if out, err := live.Log(path, 3, `exec.a["x"]`); err != nil || string(out) != "earlier\n" {
		t.Fatalf("Log of run 3 = %q, %v", out, err)
	}
	if _, err := live.Log(path, 0, "nope"); !errors.Is(err, live.ErrAnswer) || !strings.Contains(err.Error(), "has no task instance nope") {
		t.Fatalf("unknown address: err = %v, want the source's answer", err)
	}
	other := filepath.Join(t.TempDir(), "state.db")
	if _, err := live.Log(other, 0, `exec.a["x"]`); !errors.Is(err, live.ErrNotServing) {
		t.Fatalf("another state file: err = %v, want ErrNotServing", err)
	}
	stop()
	if _, err := live.Log(path, 0, `exec.a["x"]`); !errors.Is(err, live.ErrNotServing) {
		t.Fatalf("after stop: err = %v, want ErrNotServing", err)
	}
}
