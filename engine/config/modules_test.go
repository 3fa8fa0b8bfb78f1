package config_test

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/flowdev/flow/engine/config"
)

// TestModuleEdges checks that module calls expand per instance, that a task in a
// module instance waits only for what its expressions read (through a dynamic input
// too) and its call's depends_on names, and that a module output waits only for the tasks it reads.
func TestModuleEdges(t *testing.T) {
	_, plan := mustPlan(t, valid("modules.hcl"), config.VarInputs{})
	got := map[string][]string{}
	for addr, inst := range plan.Instances {
		got[addr] = inst.Deps
	}
	want := map[string][]string{
		"exec.registry":           nil,
		"module.single.exec.echo": {"exec.registry"}, // the call's depends_on
		`exec.last`:               {`module.member["m2"].exec.configure`, `module.member["m2"].exec.launch`, `module.member["m2"].module.inner.exec.echo`, "module.single.exec.echo"},
	}
	for _, m := range []string{"m1", "m2"} {
		p := `module.member["` + m + `"].`
		want[p+"exec.launch"] = []string{"exec.registry"} // local.greeting reads var.upstream
		want[p+"exec.configure"] = []string{p + "exec.launch"}
		want[p+"module.inner.exec.echo"] = []string{p + "exec.configure"}
		want[`exec.after["`+m+`"]`] = []string{p + "exec.configure"} // the output reads configure only
	}
	if len(got) != len(want) {
		t.Errorf("instances %q, want %d of them", sortedKeys(got), len(want))
	}
	wantDeps(t, got, want)
	if inst := plan.Instances[`module.member["m1"].exec.launch`]; inst.Module() != `module.member["m1"]` {
		t.Errorf("Module() = %q", inst.Module())
	}
}

// TestHashCoversModules: a module's files are part of the flow, so changing one
// changes the flow's hash (a resume then says the flow changed).
func TestHashCoversModules(t *testing.T) {
	dir := t.TempDir()
	flow, module := filepath.Join(dir, "f.hcl"), filepath.Join(dir, "m", "main.hcl")
	if err := os.MkdirAll(filepath.Dir(module), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := writeFile(flow, `module "m" { source = "./m" }`); err != nil {
		t.Fatal(err)
	}
	hash := func(moduleSrc string) string {
		t.Helper()
		if err := writeFile(module, moduleSrc); err != nil {
			t.Fatal(err)
		}
		f, diags := config.Load(flow, testRegistry(t))
		if diags.HasErrors() {
			t.Fatal(diags)
		}
		if _, ok := f.Files[module]; !ok {
			t.Errorf("Files lacks %s, for diagnostics' source snippets", module)
		}
		return f.Hash
	}
	h1 := hash(`task "exec" "a" { command = ["true"] }`)
	h2 := hash(`task "exec" "a" { command = ["false"] }`)
	if h1 == h2 {
		t.Errorf("hash %s did not change with the module's file", h1)
	}
}

// TestTaskRead: a task is read when another task's attribute, a module call's input
// or an output reads it; depends_on reads nothing, and neither does a reference to
// a module call's outputs (those read tasks of the module's own flow).
func TestTaskRead(t *testing.T) {
	flow, _ := mustPlan(t, valid("modules.hcl"), config.VarInputs{})
	got := map[string]bool{}
	var walk func(prefix string, f *config.Flow)
	walk = func(prefix string, f *config.Flow) {
		for _, task := range f.Tasks {
			got[prefix+task.Addr] = task.Read
		}
		for _, m := range f.Modules {
			walk(prefix+"module."+m.Name+".", m.Flow)
		}
	}
	walk("", flow)
	want := map[string]bool{
		"exec.registry":                        true,  // module member's input
		"exec.after":                           false, // read by nothing
		"exec.last":                            false,
		"module.member.exec.launch":            true, // configure's command
		"module.member.exec.configure":         true, // inner's input and an output
		"module.member.module.inner.exec.echo": true, // the leaf's output
		"module.single.exec.echo":              true,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Read = %v\nwant %v", got, want)
	}
}
