package cli

import (
	"testing"

	"github.com/flowdev/flow/engine"
	"github.com/flowdev/flow/engine/state"
)

// TestUIDetailPendingUndo: the page is told how many objects an instance holds still
// to be undone (its deposed objects), and nothing of what they hold.
func TestUIDetailPendingUndo(t *testing.T) {
	old := &state.Instance{Address: "exec.mk", Inputs: map[string]state.Value{"undo": {}}}
	recs := []engine.InstanceRecord{
		{Address: "exec.mk", Status: state.Failed, Deposed: []*state.Instance{old, old}},
		{Address: "exec.ok", Status: state.Succeeded},
	}
	d := uiDetail(&engine.RunRecord{ID: 1}, state.Failed, recs, false)
	if got := []int{d.Instances[0].PendingUndo, d.Instances[1].PendingUndo}; got[0] != 2 || got[1] != 0 {
		t.Errorf("pending undos %v, want [2 0]", got)
	}
}
