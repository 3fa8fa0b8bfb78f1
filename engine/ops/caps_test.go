package ops

import (
	"context"
	"testing"

	"github.com/flowdev/flow/engine/config"
	"github.com/flowdev/flow/engine/plan"
	"github.com/flowdev/flow/tasks"
)

type capsTask struct{}

func (capsTask) Validate() error                                        { return nil }
func (capsTask) Run(context.Context, *tasks.Env) (tasks.Outputs, error) { return nil, nil }

type capsDestroyer struct{ capsTask }

func (capsDestroyer) Destroy(context.Context, *tasks.Env, tasks.Outputs) error { return nil }

type capsProber struct{ capsTask }

func (capsProber) Probe(context.Context, *tasks.Env, tasks.Outputs) (string, error) { return "", nil }

// TestCapsAskNoTask: keepsObject and canProbe read what the type's registration
// found; neither builds a task to ask it (a run asks them for every instance).
func TestCapsAskNoTask(t *testing.T) {
	tests := []struct {
		name          string
		task          tasks.Task
		refresh       string
		keeps, probes bool
	}{
		{"neither", capsTask{}, "", false, false},
		{"destroyer", capsDestroyer{}, "", true, false},
		{"prober", capsProber{}, "it is there", true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			news := 0
			reg := tasks.NewRegistry()
			reg.MustRegister(tasks.Type{Name: "t", Refresh: tt.refresh, New: func() tasks.Task { news++; return tt.task }})
			kind, _ := reg.Lookup("t")
			inst := &plan.Instance{Addr: "t.a", Task: &config.Task{Kind: kind}}
			for range 3 {
				if got := keepsObject(kind); got != tt.keeps {
					t.Errorf("keepsObject = %v, want %v", got, tt.keeps)
				}
				if got := canProbe(inst); got != tt.probes {
					t.Errorf("canProbe = %v, want %v", got, tt.probes)
				}
			}
			if news != 1 {
				t.Errorf("New was called %d times, want once (by Register)", news)
			}
		})
	}
}
