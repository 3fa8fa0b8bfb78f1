package engine_test

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/zclconf/go-cty/cty"

	"github.com/flowdev/flow/engine"
	"github.com/flowdev/flow/engine/state"
)

// chainModule is a per-member chain: first reads a dynamic input (a root task's
// output), second sleeps var.ms.
const chainModule = `
variable "name" {
  type = string
}

variable "ms" {
  type = number
}

variable "upstream" {
  type = string
}

task "test_echo" "first" {
  value = "${var.name}-${var.upstream}"
}

task "test_sleep" "second" {
  ms  = var.ms
  key = test_echo.first.value
}

output "out" {
  value = test_sleep.second.value
}
`

const moduleFlow = `
variable "slow" {
  type    = number
  default = 60000
}

task "test_echo" "registry" {
  value = "reg"
}

module "member" {
  source   = "./modules/chain"
  for_each = { m1 = 1, m2 = var.slow }
  name     = each.key
  ms       = each.value
  upstream = test_echo.registry.value
}

task "test_echo" "after" {
  for_each = toset(["m1", "m2"])
  value    = module.member[each.key].out
}

output "m1" {
  value = test_echo.after["m1"].value
}
`

func writeModule(t *testing.T, h *harness, dir, src string) {
	t.Helper()
	path := filepath.Join(h.dir, dir, "main.hcl")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestModuleInterruptAndResume runs a module per member, interrupts the run while
// member m2's chain is still running (m1's finished without waiting for it), and
// resumes it: the state keys each task instance in a module by its address, so only
// the interrupted instance and what waits for it run again.
func TestModuleInterruptAndResume(t *testing.T) {
	h := newHarness(t)
	writeModule(t, h, "modules/chain", chainModule)
	m1 := `module.member["m1"].`
	m2 := `module.member["m2"].`
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		defer cancel()
		if !h.rec.waitFor(10*time.Second, func() bool {
			return h.rec.seqOf("end", `test_echo.after["m1"]`) > 0 && h.rec.running() == 1
		}) {
			t.Errorf("m1's chain did not finish while m2's ran")
		}
	}()
	first := h.run(ctx, h.plan(moduleFlow), engine.Options{})
	if first.res.Status != state.Interrupted {
		t.Fatalf("first run: status %s\n%s", first.res.Status, statuses(first.res.Records))
	}
	want := map[string]state.Status{
		"test_echo.registry":     state.Succeeded,
		m1 + "test_echo.first":   state.Succeeded,
		m1 + "test_sleep.second": state.Succeeded,
		`test_echo.after["m1"]`:  state.Succeeded,
		m2 + "test_echo.first":   state.Succeeded,
		m2 + "test_sleep.second": state.Interrupted,
		`test_echo.after["m2"]`:  state.Pending,
	}
	stored := h.stored(first.runID)
	if len(stored) != len(want) {
		t.Errorf("stored %d records, want %d:\n%s", len(stored), len(want), statuses(first.res.Records))
	}
	for addr, st := range want {
		if r := stored[addr]; r == nil || r.Status != st {
			t.Errorf("%s: stored %+v, want status %s", addr, r, st)
		}
	}
	if got := first.res.Outputs["m1"]; !got.RawEquals(cty.StringVal("out-m1-reg")) {
		t.Errorf("output m1 = %#v, want out-m1-reg", got)
	}
	if in, _ := h.rec.input(m2 + "test_sleep.second"); in != "m2-reg" {
		t.Errorf("m2's second saw key %q, want m2-reg (its own first's output)", in)
	}
	if log, err := h.store.Logs(first.runID, m1+"test_echo.first"); err != nil || string(log) != "m1-reg\n" {
		t.Errorf("logs of %stest_echo.first = %q, %v", m1, log, err)
	}

	h.rec.reset()
	o := h.run(context.Background(), h.plan(moduleFlow, "slow=1"),
		engine.Options{RunID: first.runID, Previous: h.previous(first.runID)})
	if o.res.Status != state.Succeeded || o.res.UpToDate != 5 {
		t.Fatalf("resume: status %s, %d up to date; want succeeded, 5\n%s", o.res.Status, o.res.UpToDate, statuses(o.res.Records))
	}
	ran := h.rec.started()
	if wantRan := []string{m2 + "test_sleep.second", `test_echo.after["m2"]`}; !reflect.DeepEqual(ran, wantRan) {
		t.Errorf("resume ran %q, want %q", ran, wantRan)
	}
	if in, _ := h.rec.input(`test_echo.after["m2"]`); in != "out-m2-reg" {
		t.Errorf(`after["m2"] read %q, want out-m2-reg`, in)
	}
	if !strings.Contains(o.out, m1+"test_sleep.second: up to date") {
		t.Errorf("resume output does not report m1's chain up to date:\n%s", o.out)
	}
	h.assertStored(o)
}

// TestNestedModuleOutputs reads outputs through two levels of module calls: a root
// task reads an outer module's output, which reads its inner module's output, which
// reads a task given a dynamic input from the outer module's task.
func TestNestedModuleOutputs(t *testing.T) {
	h := newHarness(t)
	writeModule(t, h, "modules/outer", `
variable "name" {
  type = string
}

task "test_echo" "start" {
  value = "start-${var.name}"
}

module "inner" {
  source = "../inner"
  text   = test_echo.start.value
}

output "inner" {
  value = module.inner.echoed
}
`)
	writeModule(t, h, "modules/inner", `
variable "text" {
  type = string
}

locals {
  upper = upper(var.text)
}

task "test_echo" "echo" {
  value = local.upper
}

output "echoed" {
  value = test_echo.echo.value
}
`)
	p := h.plan(`
module "outer" {
  source   = "./modules/outer"
  for_each = toset(["a", "b"])
  name     = each.key
}

task "test_echo" "final" {
  value = module.outer["b"].inner
}

output "all" {
  value = { for k, o in module.outer : k => o.inner }
}
`)
	inner := `module.outer["b"].module.inner.test_echo.echo`
	if deps := p.Instances["test_echo.final"].Deps; !reflect.DeepEqual(deps, []string{inner}) {
		t.Errorf("test_echo.final waits for %q, want only %s", deps, inner)
	}
	if deps := p.Instances[inner].Deps; !reflect.DeepEqual(deps, []string{`module.outer["b"].test_echo.start`}) {
		t.Errorf("%s waits for %q", inner, deps)
	}
	o := h.run(context.Background(), p, engine.Options{})
	if o.res.Status != state.Succeeded {
		t.Fatalf("status %s\n%s", o.res.Status, statuses(o.res.Records))
	}
	if in, _ := h.rec.input("test_echo.final"); in != "START-B" {
		t.Errorf("final read %q, want START-B", in)
	}
	want := cty.ObjectVal(map[string]cty.Value{"a": cty.StringVal("START-A"), "b": cty.StringVal("START-B")})
	if got := o.res.Outputs["all"]; !got.RawEquals(want) {
		t.Errorf("output all = %#v", got)
	}
}

// TestModuleSensitiveVariable: a value the caller passes as plain text becomes a secret
// where the module declares its variable sensitive, and is redacted from what the run
// prints, also when it comes from a task's output (a dynamic input).
func TestModuleSensitiveVariable(t *testing.T) {
	h := newHarness(t)
	writeModule(t, h, "modules/secret", `
variable "token" {
  type      = string
  sensitive = true
}

variable "other" {
  type      = string
  sensitive = true
}

task "test_echo" "use" {
  value = "token ${var.token} other ${var.other}"
}
`)
	o := h.run(context.Background(), h.plan(`
task "test_echo" "issue" {
  value = "dynamic-secret-text"
}

module "secret" {
  source = "./modules/secret"
  token  = "static-secret-text"
  other  = test_echo.issue.value
}

module "static" {
  source = "./modules/secret"
  token  = "static-secret-text"
  other  = "another-static-text"
}
`), engine.Options{})
	if o.res.Status != state.Succeeded {
		t.Fatalf("status %s\n%s", o.res.Status, statuses(o.res.Records))
	}
	for _, line := range []string{
		`[module.secret.test_echo.use] token (sensitive) other (sensitive)`,
		`[module.static.test_echo.use] token (sensitive) other (sensitive)`,
	} {
		if !strings.Contains(o.out, line) {
			t.Errorf("output lacks %q", line)
		}
	}
	if strings.Contains(o.out, "static-secret-text") || strings.Contains(o.out, "another-static-text") {
		t.Errorf("output does not redact the module's sensitive variables:\n%s", o.out)
	}
	if rec := o.byAddr()["module.secret.test_echo.use"]; rec == nil || !rec.Redacted {
		t.Errorf("record %+v: want its outputs kept out of the state", rec)
	}
}
