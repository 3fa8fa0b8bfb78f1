package python

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/flowdev/flow/plugin/host"
	"github.com/flowdev/flow/tasks"
	"github.com/flowdev/flow/tasks/taskstest"
)

// TestJSONFilePlugin: the Python plugin's schema, Validate, Check, Run and Destroy,
// through flow's host side.
func TestJSONFilePlugin(t *testing.T) {
	needPython(t)
	bin, err := filepath.Abs("flow-plugin-jsonfile")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	t.Chdir(dir) // the plugin runs where flow runs
	proc := host.NewProcess("jsonfile", bin, nil)
	t.Cleanup(proc.Kill)
	types, err := proc.Types(t.Context())
	if err != nil || len(types) != 1 || types[0].Name != "json_file" {
		t.Fatalf("types %v, %v", types, err)
	}
	typ := types[0]
	taskstest.CheckType(t, typ, map[string]cty.Type{"path": cty.String, "sha256": cty.String})
	if !typ.Destroys() {
		t.Error("json_file does not destroy")
	}
	task := func(values map[string]cty.Value) tasks.Task {
		task := typ.New()
		if err := tasks.Decode(task, values); err != nil {
			t.Fatal(err)
		}
		return task
	}
	value := cty.ObjectVal(map[string]cty.Value{"replicas": cty.NumberIntVal(3), "zones": cty.TupleVal([]cty.Value{cty.StringVal("a")})})

	t.Run("validate", func(t *testing.T) {
		for _, c := range []struct {
			path, attr, msg string
			indent          cty.Value
		}{
			{path: "ok.json", indent: cty.NullVal(cty.Number)},
			{path: "/abs.json", attr: "path", msg: "must be relative", indent: cty.NullVal(cty.Number)},
			{path: "x.json", attr: "indent", msg: "not between 0 and 8", indent: cty.NumberIntVal(9)},
		} {
			err := task(map[string]cty.Value{"path": cty.StringVal(c.path), "value": value, "indent": c.indent}).Validate()
			if c.attr == "" && err != nil || c.attr != "" && (err == nil || !strings.HasPrefix(err.Error(), c.attr+": ") || !strings.Contains(err.Error(), c.msg)) {
				t.Errorf("%s: Validate = %v, want %q on %q", c.path, err, c.msg, c.attr)
			}
		}
	})

	values := map[string]cty.Value{"path": cty.StringVal("s.json"), "value": value, "indent": cty.NullVal(cty.Number)}
	env, printed := taskstest.NewEnv(t)
	out, err := task(values).Run(t.Context(), env)
	if err != nil || out["path"].AsString() != "s.json" || !strings.Contains(printed.String(), "wrote s.json") {
		t.Fatalf("Run = %v, %v; printed %q", out, err, printed.String())
	}
	got, _ := os.ReadFile("s.json")
	if want := "{\n  \"replicas\": 3,\n  \"zones\": [\n    \"a\"\n  ]\n}\n"; string(got) != want {
		t.Errorf("s.json = %q, want %q", got, want)
	}
	env, printed = taskstest.NewEnv(t)
	again, err := task(values).Run(t.Context(), env)
	if err != nil || !strings.Contains(printed.String(), "already present (s.json)") || !again["sha256"].RawEquals(out["sha256"]) {
		t.Errorf("second Run = %v, %v; printed %q", again, err, printed.String())
	}
	// Probe: the recorded file as it was, changed, gone; each drift with the plugin's detail.
	for _, c := range []struct {
		change func()
		drift  string
	}{
		{func() {}, ""},
		{func() { os.WriteFile("s.json", []byte("{}\n"), 0o644) }, "it differs: s.json was changed since the run wrote it"},
		{func() { os.Remove("s.json") }, "it is gone: s.json was removed"},
	} {
		c.change()
		env, _ = taskstest.NewEnv(t)
		if drift, err := task(values).(tasks.Prober).Probe(t.Context(), env, out); err != nil || drift != c.drift {
			t.Errorf("Probe = %q, %v; want %q", drift, err, c.drift)
		}
	}
	env, _ = taskstest.NewEnv(t)
	if _, err := task(values).Run(t.Context(), env); err != nil {
		t.Fatal(err)
	}
	env, printed = taskstest.NewEnv(t)
	if err := task(values).(tasks.Destroyer).Destroy(t.Context(), env, out); err != nil || !strings.Contains(printed.String(), "removed s.json") {
		t.Errorf("Destroy = %v; printed %q", err, printed.String())
	}
	if _, err := os.Stat("s.json"); !os.IsNotExist(err) {
		t.Errorf("s.json after Destroy: %v", err)
	}
}
