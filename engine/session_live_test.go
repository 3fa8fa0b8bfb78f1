package engine_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/flowdev/flow/engine"
)

// TestReadsWhileHeld: while a session walks, another session's reads are answered by
// the holding process: its run is running (never interrupted), with the records it has
// so far, and its instances' output as captured; once the walk ends, the file answers
// the same records.
func TestReadsWhileHeld(t *testing.T) {
	h := newHarness(t)
	flow := filepath.Join(h.dir, "flow.hcl")
	h.plan("task \"test_sleep\" \"a\" {\n  ms  = 60000\n  key = \"a\"\n}\n") // writes flow.hcl
	path := filepath.Join(h.dir, "held.db")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := engine.NewSession(path, h.reg).Run(ctx, engine.Request{Flow: flow})
		done <- err
	}()
	reader := engine.NewSession(path, h.reg)
	deadline := time.Now().Add(30 * time.Second)
	for {
		run, recs, err := reader.Status(0)
		if err == nil && run.ID != 1 {
			t.Fatalf("the held file reads as run %d, want 1 at every moment", run.ID)
		}
		if err == nil && len(recs) == 1 && recs[0].Status == engine.Running {
			if run.Status != engine.Running || run.ID != 1 {
				t.Errorf("the held run reads as %d %s, want 1 running", run.ID, run.Status)
			}
			break
		}
		var noState *engine.NoStateError
		if err != nil && !errors.As(err, &noState) {
			t.Fatalf("status while held: %v", err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("the walk never showed test_sleep.a running: %+v %v", recs, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	runs, err := reader.Runs()
	if err != nil || len(runs) != 1 || runs[0].Status != engine.Running {
		t.Errorf("runs while held: %+v %v, want run 1 running", runs, err)
	}
	if _, err := reader.Log(0, "test_sleep.a"); err != nil {
		t.Errorf("log while held: %v", err)
	}
	var holder *engine.HolderError
	if _, err := reader.Log(0, "test_sleep.nope"); !errors.As(err, &holder) || holder.Answer == "" {
		t.Errorf("log of an unknown instance while held: %v, want the holder's answer", err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	run, recs, err := reader.Status(0)
	if err != nil || run.Status != engine.Interrupted || len(recs) != 1 || recs[0].Status != engine.Interrupted {
		t.Errorf("status after the walk: %+v %+v %v, want run and instance interrupted", run, recs, err)
	}
}
