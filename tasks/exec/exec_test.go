package exec

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowdev/flow/tasks"
	"github.com/flowdev/flow/tasks/taskstest"
	"github.com/zclconf/go-cty/cty"
)

func TestValidate(t *testing.T) {
	paths(t, func(t *testing.T, as func(*testing.T, *Exec) tasks.Task) {
		cases := []taskstest.ValidateCase{
			{Name: "command", Task: &Exec{Command: []string{"go", "build"}}},
			{Name: "script", Task: &Exec{Script: "echo hi"}},
			{Name: "all optional set", Task: &Exec{Command: []string{"ls"}, Env: map[string]string{"A": "1"}, Dir: "/", Stdin: "x", OkExitCodes: []int{3}}},
			{Name: "neither", Task: &Exec{}, Attr: "command", Msg: "one of command or script is required"},
			{Name: "both", Task: &Exec{Command: []string{"ls"}, Script: "ls"}, Attr: "script", Msg: "command and script are mutually exclusive; set only one"},
			{Name: "empty command and script", Task: &Exec{Command: []string{}, Script: "ls"}, Attr: "script", Msg: "mutually exclusive"},
			{Name: "empty command", Task: &Exec{Command: []string{}}, Attr: "command", Msg: "must not be empty"},
			{Name: "empty program", Task: &Exec{Command: []string{"", "x"}}, Attr: "command", Msg: "first element (the program) must not be empty"},
			{Name: "env name with =", Task: &Exec{Script: "true", Env: map[string]string{"A=B": "1"}}, Attr: "env", Msg: "no '='"},
			{Name: "empty env name", Task: &Exec{Script: "true", Env: map[string]string{"": "1"}}, Attr: "env", Msg: "non-empty"},
		}
		for i := range cases {
			cases[i].Task = as(t, cases[i].Task.(*Exec))
		}
		taskstest.CheckValidate(t, cases)
	})
}

func TestRegister(t *testing.T) {
	r := tasks.NewRegistry()
	if err := Register(r); err != nil {
		t.Fatalf("Register: %v", err)
	}
	typ, ok := r.Lookup("exec")
	if !ok {
		t.Fatal(`type "exec" not registered`)
	}
	taskstest.CheckType(t, *typ, map[string]cty.Type{"exit_code": cty.Number, "stdout": cty.String, "stderr": cty.String})
	taskstest.CheckExample(t, *typ, nil)
	if _, ok := typ.New().(*Exec); !ok {
		t.Errorf("New() returned %T, want *Exec", typ.New())
	}
	if err := Register(r); err == nil {
		t.Error("second Register succeeded, want duplicate error")
	}
}

func TestAttributes(t *testing.T) {
	attrs, err := tasks.Attributes(&Exec{})
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		name string
		typ  cty.Type
	}{
		{"command", cty.List(cty.String)},
		{"script", cty.String},
		{"env", cty.Map(cty.String)},
		{"dir", cty.String},
		{"stdin", cty.String},
		{"ok_exit_codes", cty.List(cty.Number)},
		{"sensitive_stdout", cty.Bool},
		{"undo", cty.String},
	}
	if len(attrs) != len(want) {
		t.Fatalf("got %d attributes, want %d: %+v", len(attrs), len(want), attrs)
	}
	for i, w := range want {
		a := attrs[i]
		if a.Name != w.name || !a.Type.Equals(w.typ) || a.Required || a.Doc == "" {
			t.Errorf("attribute %d = %+v, want optional %s of type %s with a doc", i, a, w.name, w.typ.FriendlyName())
		}
	}
}

func TestSensitiveStdoutIsCapturedNotShown(t *testing.T) {
	paths(t, func(t *testing.T, as func(*testing.T, *Exec) tasks.Task) {
		env, printed := taskstest.NewEnv(t)
		out, err := as(t, &Exec{Script: "echo token-0123456789; echo visible >&2", SensitiveStdout: true}).Run(context.Background(), env)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(printed.String(), "token-0123456789") || !strings.Contains(printed.String(), "visible") {
			t.Errorf("printed %q: want stderr shown and the secret stdout not", printed.String())
		}
		v := out["stdout"]
		if !v.HasMark(tasks.SensitiveMark) {
			t.Fatalf("stdout output %#v is not marked sensitive", v)
		}
		if plain, _ := v.Unmark(); plain.AsString() != "token-0123456789" {
			t.Errorf("stdout output = %q", plain.AsString())
		}
	})
}

// TestDestroyRunsUndo: Destroy runs the undo script with env and dir, and fails
// with its error; without undo it does nothing.
func TestDestroyRunsUndo(t *testing.T) {
	paths(t, func(t *testing.T, as func(*testing.T, *Exec) tasks.Task) {
		dir := t.TempDir()
		e := &Exec{Command: []string{"true"}, Dir: dir, Env: map[string]string{"WHAT": "made"},
			Undo: `test -f "$WHAT" && rm "$WHAT" && echo undone`}
		if err := os.WriteFile(filepath.Join(dir, "made"), nil, 0o600); err != nil {
			t.Fatal(err)
		}
		env, printed := taskstest.NewEnv(t)
		if err := as(t, e).(tasks.Destroyer).Destroy(t.Context(), env, nil); err != nil || !strings.Contains(printed.String(), "undone") {
			t.Fatalf("Destroy() = %v, printed %q", err, printed.String())
		}
		if _, err := os.Stat(filepath.Join(dir, "made")); !os.IsNotExist(err) {
			t.Errorf("file after undo: %v", err)
		}
		if err := as(t, e).(tasks.Destroyer).Destroy(t.Context(), env, nil); err == nil || !strings.Contains(err.Error(), "undo: script exited with code 1") {
			t.Errorf("failing undo: %v", err)
		}
		if err := as(t, &Exec{Command: []string{"true"}}).(tasks.Destroyer).Destroy(t.Context(), env, nil); err != nil {
			t.Errorf("without undo: %v", err)
		}
	})
}
