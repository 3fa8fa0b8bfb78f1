package config_test

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/flowdev/flow/engine/config"
)

func valid(name string) string { return filepath.Join("testdata", "valid", name) }

// shippedDemo is the demo flow users run with `make demo`: tested here as shipped.
var shippedDemo = filepath.Join("..", "..", "flows", "demo.hcl")

func wantDeps(t *testing.T, got, want map[string][]string) {
	t.Helper()
	for addr, w := range want {
		g, ok := got[addr]
		if !ok {
			t.Errorf("no instance %s", addr)
			continue
		}
		if !reflect.DeepEqual(g, w) {
			t.Errorf("%s.Deps = %q, want %q", addr, g, w)
		}
	}
}

// TestPerInstanceEdges checks that TYPE.NAME[each.key] makes one edge per instance,
// to the same member's upstream instance, in attributes and in depends_on alike.
func TestPerInstanceEdges(t *testing.T) {
	_, plan := mustPlan(t, shippedDemo, config.VarInputs{})
	got := map[string][]string{}
	for addr, inst := range plan.Instances {
		got[addr] = inst.Deps
	}
	var kube []string
	want := map[string][]string{`exec.prepare_host`: nil}
	for _, m := range []string{"member1", "member2", "member3"} {
		k := func(task string) string { return `exec.` + task + `["` + m + `"]` }
		want[k("launch")] = []string{"exec.prepare_host"} // depends_on, whole task
		want[k("install")] = []string{k("launch")}        // attribute, each.key
		want[k("forward")] = []string{k("install")}       // depends_on, each.key
		want[k("kubeconfig")] = []string{k("forward")}    // env map, each.key
		kube = append(kube, k("kubeconfig"))
	}
	want["exec.join"] = kube // a for expression over the whole task
	if len(got) != len(want) {
		t.Errorf("instances %q, want %d of them", sortedKeys(got), len(want))
	}
	wantDeps(t, got, want)

	// Plan.Order: dependencies first, ties by address.
	// When several are ready the smallest address starts first, so one member's
	// chain goes ahead of the next member's launch.
	var wantOrder []string
	wantOrder = append(wantOrder, "exec.prepare_host")
	for _, m := range []string{"member1", "member2", "member3"} {
		for _, task := range []string{"launch", "install", "forward", "kubeconfig"} {
			wantOrder = append(wantOrder, `exec.`+task+`["`+m+`"]`)
		}
	}
	wantOrder = append(wantOrder, "exec.join")
	if !reflect.DeepEqual(plan.Order, wantOrder) {
		t.Errorf("Order =\n%q\nwant\n%q", plan.Order, wantOrder)
	}
	if d := plan.Dependents(`exec.launch["member2"]`); !reflect.DeepEqual(d, []string{`exec.install["member2"]`}) {
		t.Errorf("Dependents(launch[member2]) = %q", d)
	}
}

func TestForEachExpansion(t *testing.T) {
	flow, plan := mustPlan(t, valid("foreach.hcl"), config.VarInputs{})
	got := map[string][]string{}
	for addr, inst := range plan.Instances {
		got[addr] = inst.Deps
	}
	want := map[string][]string{
		`exec.create["m1"]`: nil,
		`exec.create["m2"]`: nil,
		`exec.labels["m1"]`: nil,
		`exec.labels["m2"]`: nil,
		`exec.start["m1"]`:  {`exec.create["m1"]`, `exec.labels["m1"]`},
		`exec.start["m2"]`:  {`exec.create["m2"]`, `exec.labels["m2"]`},
		// each.key and a literal key: m2 reads labels["m1"] too, but nothing of m1's start.
		`exec.check["m1"]`: {`exec.labels["m1"]`, `exec.start["m1"]`},
		`exec.check["m2"]`: {`exec.labels["m1"]`, `exec.start["m2"]`},
		`exec.report`:      {`exec.check["m1"]`, `exec.check["m2"]`},
		`exec.splat`:       {`exec.create["m1"]`, `exec.create["m2"]`},
	}
	if len(got) != len(want) {
		t.Errorf("instances %q, want %d", sortedKeys(got), len(want))
	}
	wantDeps(t, got, want)

	// Map keys and values reach each.key and each.value; the object value is intact.
	inst := plan.Instances[`exec.create["m2"]`]
	if inst.Key.AsString() != "m2" || inst.Value.GetAttr("disk").AsString() != "20G" {
		t.Errorf("create[m2] key %#v value %#v", inst.Key, inst.Value)
	}
	if v := plan.Instances[`exec.labels["m1"]`].Value; v.AsString() != "blue" {
		t.Errorf("labels[m1] each.value = %#v", v)
	}
	// For a set, each.value is the key.
	if v := plan.Instances[`exec.start["m1"]`].Value; v.AsString() != "m1" {
		t.Errorf("start[m1] each.value = %#v", v)
	}
	insts := plan.TaskInstances("exec.create")
	if len(insts) != 2 || insts[0].Addr != `exec.create["m1"]` {
		t.Errorf("TaskInstances(exec.create) = %v", insts)
	}
	task, ok := flow.Task("exec.start")
	if !ok || len(task.DependsOn) != 2 || task.DependsOn[0].KeyExpr == nil {
		t.Errorf("exec.start DependsOn = %+v", task)
	}
}

// TestForEachFromVariable: a set variable given by --var changes the instances.
func TestForEachFromVariable(t *testing.T) {
	// check has a literal for_each with m1 and reads start[each.key]; start follows
	// the variable, so without m1 the reference from check["m1"] has no target.
	_, plan, diags := pipeline(t, valid("foreach.hcl"), config.VarInputs{Vars: []string{`members=["m2"]`}})
	if _, ok := plan.Instances[`exec.start["m1"]`]; ok {
		t.Error(`exec.start["m1"] exists with members = ["m2"]`)
	}
	if _, ok := plan.Instances[`exec.start["m2"]`]; !ok {
		t.Error(`exec.start["m2"] is missing`)
	}
	if len(diags) != 1 || !strings.Contains(diags[0].Detail, `exec.start has no instance "m1" (seen from exec.check["m1"]); its keys are "m2".`) {
		t.Errorf("diags:\n%s", describe(diags))
	}
}

// TestNumericKeys: exec.shard[1] is the instance with key "1".
func TestNumericKeys(t *testing.T) {
	_, plan := mustPlan(t, valid("numeric_keys.hcl"), config.VarInputs{})
	if got := plan.Instances["exec.first"].Deps; !reflect.DeepEqual(got, []string{`exec.shard["1"]`, `exec.shard["true"]`}) {
		t.Errorf("exec.first.Deps = %q", got)
	}
}

func TestFunctions(t *testing.T) {
	t.Setenv("FLOW_TEST_GREETING", "hello from env")
	flow, plan := mustPlan(t, valid("functions.hcl"), config.VarInputs{Vars: []string{"name=flow"}})
	got := plan.Scope.Locals
	want := map[string]cty.Value{
		"greeting": cty.StringVal("hello, flow!"),
		"upper":    cty.StringVal("HELLO, FLOW!"),
		"joined":   cty.StringVal("a,b,c"),
		"merged":   cty.ObjectVal(map[string]cty.Value{"a": cty.NumberIntVal(1), "b": cty.NumberIntVal(3), "c": cty.NumberIntVal(4)}),
		"json":     cty.StringVal(`{"n":2,"name":"flow"}`),
		"yaml":     cty.StringVal("\"name\": \"flow\"\n"),
		"rendered": cty.StringVal("Hello, flow!\n- X\n- Y\n"),
		"motd":     cty.StringVal("Message of the day"),
		"from_env": cty.StringVal("hello from env"),
		"unset":    cty.StringVal(""),
		"dir":      cty.StringVal("/srv/www"),
		"base":     cty.StringVal("index.html"),
		"b64":      cty.StringVal("ZmxvdyDinJM="),
		"unb64":    cty.StringVal("flow ✓"),
	}
	for name, w := range want {
		g, ok := got[name]
		if !ok {
			t.Errorf("local %s missing", name)
			continue
		}
		if !g.RawEquals(w) {
			t.Errorf("local.%s = %#v, want %#v", name, g, w)
		}
	}
	// path.flow is the flow's directory, absolute, so "${path.flow}/x" works in
	// file() and templatefile() from any working directory.
	abs, _ := filepath.Abs(filepath.Join("testdata", "valid"))
	if flow.Dir != abs {
		t.Errorf("Dir = %q, want %q", flow.Dir, abs)
	}
	if p := plan.Scope.EvalContext(cty.NilVal, cty.NilVal).Variables["path"].GetAttr("flow").AsString(); p != abs {
		t.Errorf("path.flow = %q, want %q", p, abs)
	}
}

func TestLocalsChain(t *testing.T) {
	_, plan := mustPlan(t, valid("locals_chain.hcl"), config.VarInputs{Vars: []string{"env=prod"}})
	want := []string{`exec.ping["m1"]`, `exec.ping["m2"]`, `exec.ping["m3"]`}
	if !reflect.DeepEqual(plan.Order, want) {
		t.Errorf("Order = %q, want %q", plan.Order, want)
	}
	if v := plan.Instances[`exec.ping["m3"]`].Value.AsString(); v != "m3.prod.example.org" {
		t.Errorf(`each.value of ping["m3"] = %q`, v)
	}
}

// TestDirectoryFlow loads every .hcl file of a directory as one flow, with references
// across files and file() relative to the directory.
func TestDirectoryFlow(t *testing.T) {
	flow, plan := mustPlan(t, filepath.Join("testdata", "dirflow"), config.VarInputs{})
	if len(flow.Files) != 3 {
		t.Errorf("Files = %v", sortedKeys(flow.Files))
	}
	if got := plan.Instances["exec.hello"].Deps; !reflect.DeepEqual(got, []string{"exec.later"}) {
		t.Errorf("exec.hello.Deps = %q", got)
	}
	var names []string
	for _, task := range flow.Tasks {
		names = append(names, task.Addr)
	}
	if !reflect.DeepEqual(names, []string{"exec.hello", "exec.later"}) {
		t.Errorf("Tasks in declaration order (files sorted) = %q", names)
	}
	if len(flow.Hash) != 64 {
		t.Errorf("Hash = %q", flow.Hash)
	}
}

func TestLoadErrorsWithoutSource(t *testing.T) {
	for _, path := range []string{filepath.Join("testdata", "nope.hcl"), filepath.Join("testdata", "templates")} {
		flow, diags := config.Load(path, testRegistry(t))
		if flow != nil || !diags.HasErrors() || diags[0].Summary != "Cannot read flow" {
			t.Errorf("Load(%s) = %v, %v", path, flow, diags)
		}
	}
}

// TestPartialVariables: validate and graph plan a flow before its required variables
// have values; those become unknown.
func TestPartialVariables(t *testing.T) {
	path := filepath.Join("testdata", "invalid", "required_variable.hcl")
	flow, diags := config.Load(path, testRegistry(t))
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	vars, diags := flow.Assign(config.VarInputs{Partial: true})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	if vars["token"].IsKnown() || vars["replicas"].IsKnown() || !vars["region"].IsKnown() {
		t.Errorf("vars = %#v", vars)
	}
	if !vars["token"].HasMark(config.Sensitive) {
		t.Error("unknown sensitive variable is not marked")
	}
}

func TestHashChangesWithContent(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f.hcl")
	write := func(s string) string {
		t.Helper()
		if err := writeFile(p, s); err != nil {
			t.Fatal(err)
		}
		f, diags := config.Load(p, testRegistry(t))
		if diags.HasErrors() {
			t.Fatal(diags)
		}
		return f.Hash
	}
	h1 := write(`task "exec" "a" { command = ["true"] }`)
	h2 := write(`task "exec" "a" { command = ["false"] }`)
	h3 := write(`task "exec" "a" { command = ["true"] }`)
	if h1 == h2 || h1 != h3 {
		t.Errorf("hashes %s %s %s", h1, h2, h3)
	}
}

// TestCycleStableOrder: one diagnostic per cycle, naming every member in the same order
// whatever the declaration order.
func TestCycleStableOrder(t *testing.T) {
	var details []string
	for _, name := range []string{"cycle_abc.hcl", "cycle_cba.hcl"} {
		_, _, diags := pipeline(t, filepath.Join("testdata", "invalid", name), config.VarInputs{})
		if len(diags) != 1 {
			t.Fatalf("%s: %d diagnostics, want 1:\n%s", name, len(diags), describe(diags))
		}
		details = append(details, diags[0].Detail)
	}
	want := "These tasks depend on each other in a cycle: exec.a -> exec.b -> exec.c -> exec.a."
	if details[0] != want || details[1] != want {
		t.Errorf("details = %q, want %q", details, want)
	}
}
