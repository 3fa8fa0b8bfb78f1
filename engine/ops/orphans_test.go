package ops

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/flowdev/flow/engine/state"
	"github.com/flowdev/flow/tasks"
)

// TestMadeElsewhere: the live instances made in another directory than here are
// counted and their directories named, a record without a directory counting as made
// in its run's.
func TestMadeElsewhere(t *testing.T) {
	store, err := state.Open(filepath.Join(t.TempDir(), "state.db"), state.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	commit := func(dir string, recs ...*state.Instance) {
		run := &state.Run{Flow: "/p/flow.hcl", Dir: dir, Status: state.Succeeded}
		if err := store.CreateRun(run); err != nil {
			t.Fatal(err)
		}
		if err := store.Commit(run.ID, run, recs, nil); err != nil {
			t.Fatal(err)
		}
	}
	made := func(addr, dir string) *state.Instance {
		return &state.Instance{Address: addr, Type: "exec", Status: state.Succeeded, Dir: dir}
	}
	commit("/p/a", made("exec.here", "/p/a"), made("exec.there", "/p/b"), made("exec.old_here", ""))
	commit("/p/c", made("exec.old_there", ""))
	live, err := LiveInstances(store)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		here      string
		wantCount int
		wantDirs  []string
	}{
		{"/p/a", 2, []string{"/p/b", "/p/c"}},
		{"/p/b", 3, []string{"/p/a", "/p/c"}},
		{"/p/d", 4, []string{"/p/a", "/p/b", "/p/c"}},
	}
	for _, tt := range tests {
		t.Run(tt.here, func(t *testing.T) {
			n, dirs := MadeElsewhere(store, live, tt.here)
			if n != tt.wantCount || !slices.Equal(dirs, tt.wantDirs) {
				t.Errorf("MadeElsewhere = %d %v, want %d %v", n, dirs, tt.wantCount, tt.wantDirs)
			}
		})
	}
}

// TestOrphanDecisions: the live instances a walk does not visit are undone first, or
// kept when they cannot be undone; --keep-removed keeps them all.
func TestOrphanDecisions(t *testing.T) {
	reg := tasks.NewRegistry()
	reg.MustRegister(tasks.Type{Name: "undoable", New: func() tasks.Task { return capsDestroyer{} }})
	orphan := func(addr, typ string, order int) Orphan {
		return Orphan{Run: 1, Rec: &state.Instance{Address: addr, Type: typ, Order: order, Status: state.Succeeded,
			Inputs: map[string]state.Value{}}}
	}
	live := map[string]Orphan{
		"undoable.walked": orphan("undoable.walked", "undoable", 2),
		"undoable.gone":   orphan("undoable.gone", "undoable", 1),
		"unknown.gone":    orphan("unknown.gone", "unknown", 0),
	}
	walked := func(addr string) bool { return addr == "undoable.walked" }
	tests := []struct {
		name string
		keep bool
		want []string
	}{
		{"undone first", false, []string{"undoable.gone destroy undone first", "unknown.gone keep no task type"}},
		{"--keep-removed", true, []string{"undoable.gone keep --keep-removed", "unknown.gone keep no task type"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ds := OrphanDecisions(reg, live, walked, tt.keep)
			if len(ds) != len(tt.want) {
				t.Fatalf("decisions %+v, want %d", ds, len(tt.want))
			}
			for i, d := range ds {
				f := strings.SplitN(tt.want[i], " ", 3)
				if d.Addr != f[0] || string(d.Action) != f[1] || !strings.Contains(d.Reason, f[2]) {
					t.Errorf("decision %d = %+v, want %s %s, a reason with %q", i, d, f[0], f[1], f[2])
				}
			}
		})
	}
}
