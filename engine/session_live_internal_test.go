package engine

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/flowdev/flow/engine/state"
)

// Before its walk starts, a holding session answers with the file's runs as it holds
// them: the latest, recorded as running, is running, with the records it has; never
// a run without an ID (TestKarmadaLocalLabKillAndResume once polled that window).
func TestLiveStatusBeforeTheWalk(t *testing.T) {
	path := filepath.Join(t.TempDir(), "held.db")
	first := &state.Run{Flow: "/f/flow.hcl", Status: state.Running, StartedAt: time.Now().UTC()}
	store, err := state.Open(path, state.Options{FirstRun: first})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	src := &liveSource{store: store}
	for _, runID := range []uint64{0, first.ID} {
		got, err := src.Status(runID)
		if err != nil {
			t.Fatalf("status %d before the walk: %v", runID, err)
		}
		st := got.(liveStatus)
		if st.Run == nil || st.Run.ID != first.ID || st.Run.Status != Running || st.Instances == nil {
			t.Errorf("status %d before the walk: %+v, want run %d running with its records", runID, st.Run, first.ID)
		}
	}
	if _, err := src.Log(0, "exec.a"); err == nil {
		t.Errorf("log of an instance the file does not have: no error")
	}
}
