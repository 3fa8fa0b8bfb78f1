package exec

import (
	"os"
	"testing"
	"time"

	"github.com/flowdev/flow/plugin/host"
	pluginserver "github.com/flowdev/flow/plugin/server"
	"github.com/flowdev/flow/tasks"
	"github.com/flowdev/flow/tasks/internal/command"
)

// TestMain serves the exec family as a plugin when the test binary is started as
// one: the plugin path of the tests below runs exec's own cases through it.
func TestMain(m *testing.M) {
	if os.Getenv("FLOW_TEST_SERVE_EXEC") == "1" {
		if g, err := time.ParseDuration(os.Getenv("FLOW_TEST_KILL_GRACE")); err == nil {
			command.KillGrace = g
		}
		pluginserver.Serve(Register)
		return
	}
	os.Exit(m.Run())
}

// path turns an Exec into the task a test runs: the Exec itself, or a task of the
// exec type served by a plugin process (this test binary) with the same attributes.
type path struct {
	name string
	as   func(t *testing.T, e *Exec) tasks.Task
}

// paths runs f once for the built-in type and once through the plugin path. A
// plugin process is started per test, with the kill grace the test set.
func paths(t *testing.T, f func(t *testing.T, as func(*testing.T, *Exec) tasks.Task)) {
	t.Run("built-in", func(t *testing.T) { f(t, func(_ *testing.T, e *Exec) tasks.Task { return e }) })
	t.Run("plugin", func(t *testing.T) { f(t, viaPlugin(t)) })
}

func viaPlugin(t *testing.T) func(*testing.T, *Exec) tasks.Task {
	t.Helper()
	t.Setenv("FLOW_TEST_SERVE_EXEC", "1")
	t.Setenv("FLOW_TEST_KILL_GRACE", command.KillGrace.String())
	proc := host.NewProcess("exec", os.Args[0], nil)
	t.Cleanup(proc.Kill)
	types, err := proc.Types(t.Context())
	if err != nil {
		t.Fatalf("plugin types: %v", err)
	}
	if len(types) != 1 || types[0].Name != "exec" {
		t.Fatalf("plugin serves %v, want exec", types)
	}
	typ := types[0]
	return func(t *testing.T, e *Exec) tasks.Task {
		t.Helper()
		values, err := pluginserver.Values(e)
		if err != nil {
			t.Fatal(err)
		}
		task := typ.New()
		if err := tasks.Decode(task, values); err != nil {
			t.Fatal(err)
		}
		return task
	}
}

// TestPluginType: the exec type served by a plugin documents itself as the built-in
// one does: the same attributes, outputs and undo.
func TestPluginType(t *testing.T) {
	t.Setenv("FLOW_TEST_SERVE_EXEC", "1")
	proc := host.NewProcess("exec", os.Args[0], nil)
	t.Cleanup(proc.Kill)
	types, err := proc.Types(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	got, want := types[0], execType()
	gotAttrs, _ := tasks.Attributes(got.New())
	wantAttrs, _ := tasks.Attributes(want.New())
	if len(gotAttrs) != len(wantAttrs) {
		t.Fatalf("attributes %v, want %v", gotAttrs, wantAttrs)
	}
	for i := range wantAttrs {
		g, w := gotAttrs[i], wantAttrs[i]
		if g.Name != w.Name || !g.Type.Equals(w.Type) || g.Required != w.Required || g.Doc != w.Doc {
			t.Errorf("attribute %d = %+v, want %+v", i, g, w)
		}
	}
	if len(got.Outputs) != len(want.Outputs) || got.Summary != want.Summary || got.UndoAttr != want.UndoAttr ||
		got.Example != want.Example || !got.Destroys() || got.UndoText() != want.UndoText() {
		t.Errorf("type %+v, want %+v", got, want)
	}
}
