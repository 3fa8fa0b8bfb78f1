package tasks_test

import (
	"context"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/flowdev/flow/tasks"
)

// described is the smallest tasks.Described.
type described struct{ values map[string]cty.Value }

func (*described) Validate() error                                        { return nil }
func (*described) Run(context.Context, *tasks.Env) (tasks.Outputs, error) { return nil, nil }
func (*described) Schema() []tasks.Attribute                              { return nil }
func (d *described) DecodeValues(v map[string]cty.Value) error            { d.values = v; return nil }

// WithCaps gives a task exactly the optional interfaces it is given functions for,
// calls them, and keeps the task's own methods.
func TestWithCaps(t *testing.T) {
	destroy := func(context.Context, *tasks.Env, tasks.Outputs) error { return nil }
	probe := func(context.Context, *tasks.Env, tasks.Outputs) (string, error) { return "gone", nil }
	for _, tc := range []struct {
		name             string
		destroy          tasks.DestroyFunc
		probe            tasks.ProbeFunc
		destroys, probes bool
	}{
		{name: "neither"},
		{name: "destroys", destroy: destroy, destroys: true},
		{name: "probes", probe: probe, probes: true},
		{name: "both", destroy: destroy, probe: probe, destroys: true, probes: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := &described{}
			task := tasks.WithCaps(base, tc.destroy, tc.probe)
			d, destroys := task.(tasks.Destroyer)
			p, probes := task.(tasks.Prober)
			if destroys != tc.destroys || probes != tc.probes {
				t.Fatalf("Destroyer %t, Prober %t; want %t, %t", destroys, probes, tc.destroys, tc.probes)
			}
			if destroys && d.Destroy(context.Background(), nil, nil) != nil {
				t.Errorf("Destroy did not call the function given")
			}
			if probes {
				if drift, _ := p.Probe(context.Background(), nil, nil); drift != "gone" {
					t.Errorf("Probe said %q, want the function's %q", drift, "gone")
				}
			}
			if err := task.DecodeValues(map[string]cty.Value{"a": cty.True}); err != nil || base.values == nil {
				t.Errorf("DecodeValues did not reach the task: %v", err)
			}
		})
	}
}
