package tasks_test

import (
	"context"
	"testing"

	"github.com/flowdev/flow/tasks"
)

// destroyer, prober and proberDestroyer are samples with each combination of the
// optional interfaces.
type (
	destroyer       struct{ sample }
	prober          struct{ sample }
	proberDestroyer struct{ sample }
)

func (*destroyer) Destroy(context.Context, *tasks.Env, tasks.Outputs) error { return nil }
func (*prober) Probe(context.Context, *tasks.Env, tasks.Outputs) (string, error) {
	return "", nil
}
func (*proberDestroyer) Destroy(context.Context, *tasks.Env, tasks.Outputs) error { return nil }
func (*proberDestroyer) Probe(context.Context, *tasks.Env, tasks.Outputs) (string, error) {
	return "", nil
}

// TestRegisterFindsCaps: Register builds one task to find what a type can do, and
// every later question reads what it found without building another.
func TestRegisterFindsCaps(t *testing.T) {
	tests := []struct {
		name string
		task func() tasks.Task
		typ  tasks.Type
		want tasks.Caps
	}{
		{"neither", func() tasks.Task { return &sample{} }, tasks.Type{Undo: tasks.UndoNothing}, tasks.Caps{}},
		{"destroys", func() tasks.Task { return &destroyer{} }, tasks.Type{Undo: "flow destroy removes it.", UndoAttr: "name", DestroyReads: []string{"name"}}, tasks.Caps{Destroys: true}},
		{"probes", func() tasks.Task { return &prober{} }, tasks.Type{Refresh: "it is there"}, tasks.Caps{Probes: true}},
		{"both", func() tasks.Task { return &proberDestroyer{} }, tasks.Type{Refresh: "it is there"}, tasks.Caps{Destroys: true, Probes: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			news := 0
			typ := tt.typ
			typ.Name = tt.name
			typ.New = func() tasks.Task { news++; return tt.task() }
			reg := tasks.NewRegistry()
			if err := reg.Register(typ); err != nil {
				t.Fatalf("Register: %v", err)
			}
			if news != 1 {
				t.Errorf("Register built %d tasks, want 1", news)
			}
			got, _ := reg.Lookup(tt.name)
			for range 3 {
				if c := got.Caps(); c != tt.want {
					t.Errorf("Caps = %+v, want %+v", c, tt.want)
				}
				if got.Destroys() != tt.want.Destroys || got.Probes() != tt.want.Probes {
					t.Errorf("Destroys, Probes = %v, %v; want %+v", got.Destroys(), got.Probes(), tt.want)
				}
				_, _, _ = got.UndoText(), got.UndoColumn(), got.RefreshText()
			}
			if news != 1 {
				t.Errorf("asking the type built %d more tasks, want none", news-1)
			}
		})
	}
	if (&tasks.Type{New: func() tasks.Task { return &destroyer{} }}).Destroys() {
		t.Error("a type never registered reports Destroys")
	}
}

// TestRegisterCapsErrors: a type's documentation follows from the interfaces its
// tasks implement; Register names the type and every way it disagrees.
func TestRegisterCapsErrors(t *testing.T) {
	tests := []struct {
		name string
		task tasks.Task
		typ  tasks.Type
		want string
	}{
		{"prober without refresh", &prober{}, tasks.Type{},
			`register task type "t": it implements tasks.Prober without Refresh (what its Probe looks at)`},
		{"refresh without prober", &sample{}, tasks.Type{Refresh: "it is there"},
			`register task type "t": it has Refresh but does not implement tasks.Prober`},
		{"destroy text without destroyer", &sample{}, tasks.Type{Undo: "flow destroy removes it."},
			`register task type "t": its Undo says what flow destroy does, but it does not implement tasks.Destroyer`},
		{"destroyer with nothing to undo", &destroyer{}, tasks.Type{Undo: tasks.UndoNothing},
			`register task type "t": it implements tasks.Destroyer, but its Undo says there is nothing to undo`},
		{"undo settings without destroyer", &sample{}, tasks.Type{UndoAttr: "name", DestroyReads: []string{"name"}},
			"register task type \"t\": it has UndoAttr but does not implement tasks.Destroyer\n" +
				"it has DestroyReads but does not implement tasks.Destroyer"},
		{"every rule at once", &prober{}, tasks.Type{Undo: "flow destroy removes it.", UndoAttr: "name"},
			"register task type \"t\": it implements tasks.Prober without Refresh (what its Probe looks at)\n" +
				"its Undo says what flow destroy does, but it does not implement tasks.Destroyer\n" +
				"it has UndoAttr but does not implement tasks.Destroyer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			typ := tt.typ
			typ.Name, typ.New = "t", func() tasks.Task { return tt.task }
			reg := tasks.NewRegistry()
			err := reg.Register(typ)
			if err == nil || err.Error() != tt.want {
				t.Fatalf("Register = %v\nwant %s", err, tt.want)
			}
			if _, ok := reg.Lookup("t"); ok {
				t.Error("the rejected type is registered")
			}
		})
	}
}
