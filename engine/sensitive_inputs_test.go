package engine_test

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/flowdev/flow/engine"
	"github.com/flowdev/flow/engine/state"
	"github.com/flowdev/flow/tasks"
)

// envTask is a tasks.SensitiveInputs: it reports which of its env values the
// engine said derive from a sensitive variable (told before it runs).
type envTask struct {
	Env       map[string]string `hcl:"env"`
	sensitive []string
}

var envTold sync.Map // address => the env keys told sensitive, sorted

func (t *envTask) Validate() error { return nil }

func (t *envTask) SetSensitive(paths map[string][]cty.Path) {
	for _, p := range paths["env"] {
		if idx, ok := p[0].(cty.IndexStep); ok {
			t.sensitive = append(t.sensitive, idx.Key.AsString())
		}
	}
	slices.Sort(t.sensitive)
}

func (t *envTask) Run(_ context.Context, env *tasks.Env) (tasks.Outputs, error) {
	envTold.Store(env.Address, t.sensitive)
	return nil, nil
}

// The engine tells a task that asks which inputs derive from a sensitive variable,
// by path inside the attribute, and nothing about the others.
func TestSensitiveInputsTold(t *testing.T) {
	h := newHarness(t)
	h.reg.MustRegister(tasks.Type{Name: "test_env", New: func() tasks.Task { return &envTask{} }})
	src := `
variable "token" {
  type      = string
  sensitive = true
}

task "test_env" "mixed" {
  env = { PLAIN = "visible", TOKEN = var.token, DERIVED = "bearer ${var.token}" }
}

task "test_env" "plain" {
  env = { PLAIN = "visible" }
}
`
	o := h.run(context.Background(), h.plan(src, "token=s3cr3t"), engine.Options{})
	if o.res.Status != state.Succeeded {
		t.Fatalf("run: %s\n%s", o.res.Status, o.out)
	}
	for addr, want := range map[string][]string{"test_env.mixed": {"DERIVED", "TOKEN"}, "test_env.plain": nil} {
		got, _ := envTold.Load(addr)
		if !slices.Equal(got.([]string), want) {
			t.Errorf("%s was told %v sensitive, want %v", addr, got, want)
		}
	}
}
