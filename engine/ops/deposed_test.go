package ops

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/flowdev/flow/engine/config"
	"github.com/flowdev/flow/engine/state"
	"github.com/flowdev/flow/engine/walk"
	"github.com/flowdev/flow/tasks"
)

// TestLiveInstancesKeepsWhatNoUndoRemoved: the live set, folded from every run's
// records, forgets an object only when an undo of it succeeded: a failed destroy, a
// failed orphan undo and a later attempt that deposed it all keep it; a destroy that
// succeeded, an orphan undone and a cascade that undid everything drop it. Each
// history is a list of runs; an instance's object is named by its input "x".
func TestLiveInstancesKeepsWhatNoUndoRemoved(t *testing.T) {
	obj := func(addr, x string, status state.Status) *state.Instance {
		return &state.Instance{Address: addr, Type: "exec", Status: status, Attempts: 1, Dir: "/p",
			Inputs: map[string]state.Value{"x": {Value: []byte(`"` + x + `"`), Type: []byte(`"string"`)}}}
	}
	deposed := func(rec *state.Instance, old ...*state.Instance) *state.Instance { rec.Deposed = old; return rec }
	type run struct {
		destroys bool
		status   state.Status
		recs     []*state.Instance
	}
	tests := []struct {
		name string
		runs []run
		want []string // address=object;deposed objects
	}{{
		name: "a failed attempt records its object",
		runs: []run{{recs: []*state.Instance{obj("a", "one", state.Failed)}}},
		want: []string{"a=one"},
	}, {
		name: "a failed undo before replacing keeps the old object deposed",
		runs: []run{{recs: []*state.Instance{obj("a", "one", state.Succeeded)}},
			{recs: []*state.Instance{deposed(obj("a", "two", state.Failed), obj("a", "one", state.Succeeded))}}},
		want: []string{"a=two;one"},
	}, {
		name: "a failed destroy forgets nothing",
		runs: []run{{recs: []*state.Instance{obj("a", "one", state.Succeeded), obj("b", "one", state.Succeeded)}},
			{destroys: true, status: state.Failed, recs: []*state.Instance{obj("a", "one", state.Failed), {Address: "b", Status: state.Skipped}}}},
		want: []string{"a=one", "b=one"},
	}, {
		name: "a destroy undoes what succeeded",
		runs: []run{{recs: []*state.Instance{obj("a", "one", state.Succeeded), obj("b", "one", state.Succeeded)}},
			{destroys: true, status: state.Failed, recs: []*state.Instance{obj("a", "one", state.Succeeded), obj("b", "one", state.Failed)}}},
		want: []string{"b=one"},
	}, {
		name: "a failed orphan undo keeps it",
		runs: []run{{recs: []*state.Instance{obj("a", "one", state.Succeeded)}},
			{recs: []*state.Instance{func() *state.Instance { r := obj("a", "one", state.Failed); r.Removed = true; return r }()}}},
		want: []string{"a=one"},
	}, {
		name: "a cascade that undid everything drops it; one cut short keeps the rest",
		runs: []run{{recs: []*state.Instance{obj("a", "one", state.Succeeded), obj("b", "one", state.Succeeded)}},
			{recs: []*state.Instance{{Address: "a", Status: state.Pending, Holds: true},
				{Address: "b", Status: state.Pending, Holds: true, Deposed: []*state.Instance{obj("b", "one", state.Succeeded)}}}}},
		want: []string{"b=;one"},
	}, {
		name: "an instance a new run never started stays as the earlier run left it",
		runs: []run{{recs: []*state.Instance{deposed(obj("a", "two", state.Failed), obj("a", "one", state.Succeeded))}},
			{recs: []*state.Instance{{Address: "a", Status: state.Skipped}}}},
		want: []string{"a=two;one"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store, err := state.Open(filepath.Join(t.TempDir(), "state.db"), state.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer store.Close()
			var last uint64
			for _, r := range tt.runs {
				rec := &state.Run{Flow: "/p/f.hcl", Dir: "/p", Status: state.Succeeded}
				if r.destroys {
					rec.Destroys, rec.Status = last, r.status
				}
				if err := store.CreateRun(rec); err != nil {
					t.Fatal(err)
				}
				if err := store.Commit(rec.ID, rec, r.recs, nil); err != nil {
					t.Fatal(err)
				}
				if !r.destroys {
					last = rec.ID
				}
			}
			live, err := LiveInstances(store)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for addr, o := range live {
				got = append(got, addr+"="+objectsOf(o.Rec))
			}
			sort.Strings(got)
			if !slices.Equal(got, tt.want) {
				t.Errorf("live %q, want %q", got, tt.want)
			}
		})
	}
}

// objectsOf names rec's own object (if it still has one) and its deposed objects by
// their input "x": "own;deposed,deposed".
func objectsOf(rec *state.Instance) string {
	name := func(r *state.Instance) string {
		if r.Holds || r.Inputs == nil {
			return ""
		}
		return strings.Trim(string(r.Inputs["x"].Value), `"`)
	}
	s := name(rec)
	var old []string
	for _, d := range rec.Deposed {
		old = append(old, name(d))
	}
	if len(old) > 0 {
		s += ";" + strings.Join(old, ",")
	}
	return s
}

// TestCarried: a first attempt takes over the deposed objects of the live record (what
// earlier runs made and no run undid), whatever record the walk builds on; a record a
// cascade of this walk took over keeps its own.
func TestCarried(t *testing.T) {
	old := &state.Instance{Address: "a", Dir: "/old"}
	older := &state.Instance{Address: "a", Dir: "/older"}
	tests := []struct {
		name     string
		previous *state.Instance
		made     *state.Instance
		cur      *state.Instance
		want     []string
	}{
		{"a new run carries the live record's", nil, &state.Instance{Deposed: []*state.Instance{older, old}}, &state.Instance{}, []string{"/older", "/old"}},
		{"a resume: the live record is the run's own", &state.Instance{}, &state.Instance{Deposed: []*state.Instance{old}}, &state.Instance{Deposed: []*state.Instance{old}}, []string{"/old"}},
		{"a run that builds on a record holding nothing carries the live record's", &state.Instance{}, &state.Instance{Deposed: []*state.Instance{older}}, &state.Instance{}, []string{"/older"}},
		{"a cascade's record keeps its own", nil, &state.Instance{Deposed: []*state.Instance{older}}, &state.Instance{Holds: true, Deposed: []*state.Instance{old}}, []string{"/old"}},
		{"nothing made", nil, nil, &state.Instance{}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := &walk.Options{Previous: map[string]*state.Instance{}, Made: map[string]*state.Instance{}}
			if tt.previous != nil {
				opts.Previous["a"] = tt.previous
			}
			if tt.made != nil {
				opts.Made["a"] = tt.made
			}
			var got []string
			for _, d := range carried(opts, "a", tt.cur) {
				got = append(got, d.Dir)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("carried %q, want %q", got, tt.want)
			}
		})
	}
}

// dirTask records, for each Destroy, its name and the directory it acted in.
type dirTask struct {
	Name string `hcl:"name"`
	log  *dirLog
}

type dirLog struct {
	mu  sync.Mutex
	got []string
}

func (*dirTask) Validate() error                                        { return nil }
func (*dirTask) Run(context.Context, *tasks.Env) (tasks.Outputs, error) { return nil, nil }
func (t *dirTask) Destroy(_ context.Context, env *tasks.Env, _ tasks.Outputs) error {
	t.log.mu.Lock()
	defer t.log.mu.Unlock()
	t.log.got = append(t.log.got, t.Name+" in "+filepath.Base(env.Dir))
	return nil
}

// memStore is a walk's checkpointer that keeps nothing.
type memStore struct{}

func (memStore) Commit(uint64, *state.Run, []*state.Instance, map[string][]byte) error { return nil }

// TestUndoActsWhereRecorded: the undo of an orphan and of each of its deposed objects
// acts in the directory its record names while it exists, else in the walk's; after a
// move, always in the walk's.
func TestUndoActsWhereRecorded(t *testing.T) {
	root := t.TempDir()
	made, here := filepath.Join(root, "made"), filepath.Join(root, "here")
	for _, d := range []string{made, here} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	gone := filepath.Join(root, "gone")
	object := func(name, dir string) *state.Instance {
		return &state.Instance{Address: "d.x", Type: "d", Status: state.Succeeded, Attempts: 1, Dir: dir,
			Inputs: map[string]state.Value{"name": mustEncode(t, name)}}
	}
	tests := []struct {
		name  string
		moved bool
		rec   *state.Instance
		want  []string
	}{
		{"where it was made", false, object("own", made), []string{"own in made"}},
		{"its directory gone: here", false, object("own", gone), []string{"own in here"}},
		{"moved: here", true, object("own", made), []string{"own in here"}},
		{"deposed objects, each where it was made, newest last",
			false, func() *state.Instance {
				r := object("own", made)
				r.Deposed = []*state.Instance{object("older", here), object("old", made)}
				return r
			}(), []string{"own in made", "old in made", "older in here"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			log := &dirLog{}
			reg := tasks.NewRegistry()
			reg.MustRegister(tasks.Type{Name: "d", New: func() tasks.Task { return &dirTask{log: log} }})
			orphans := []Orphan{{Run: 1, Rec: tt.rec}}
			w := newOrphanDestroyer(orphans, reg, &config.Scope{}, walk.Options{Store: memStore{}, Dir: here, Moved: tt.moved})
			res, err := w.Run(context.Background())
			if err != nil || res.Status != state.Succeeded {
				t.Fatalf("walk: %v, %v", res.Status, err)
			}
			if !slices.Equal(log.got, tt.want) {
				t.Errorf("undone %q, want %q", log.got, tt.want)
			}
		})
	}
}

func mustEncode(t *testing.T, s string) state.Value {
	t.Helper()
	v, err := state.EncodeValue(cty.StringVal(s))
	if err != nil {
		t.Fatal(err)
	}
	return v
}
