package config_test

import (
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
