package ops

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/zclconf/go-cty/cty"

	"github.com/flowdev/flow/engine/state"
	"github.com/flowdev/flow/tasks"
)

// answerProber answers a probe as told, and keeps the outputs it was given.
type answerProber struct {
	capsTask
	what string
	err  error
	got  tasks.Outputs
}

func (p *answerProber) Probe(_ context.Context, _ *tasks.Env, recorded tasks.Outputs) (string, error) {
	p.got = recorded
	return p.what, p.err
}

// TestDrift: a probe that finds nothing lets a success stand; one that finds drift, or
// cannot look (its error, a plugin's Check that failed), runs the instance again, and
// says why. The probe is given the outputs the success recorded.
func TestDrift(t *testing.T) {
	tests := []struct {
		name string
		what string
		err  error
		want string // a part of the reason; "" when the success stands
	}{
		{"nothing found", "", nil, ""},
		{"drifted", "the file is gone", nil, "drifted since it succeeded: the file is gone"},
		{"cannot look", "", errors.New("plugin exited"), "refresh could not look at it (plugin exited)"},
	}
	out, err := state.EncodeValue(cty.StringVal("v1"))
	if err != nil {
		t.Fatal(err)
	}
	prev := &state.Instance{Address: "t.a", Status: state.Succeeded, Outputs: map[string]state.Value{"value": out}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &answerProber{what: tt.what, err: tt.err}
			env := &tasks.Env{Address: "t.a", Logger: hclog.NewNullLogger()}
			got := drift(context.Background(), p, env, prev)
			if (got == "") != (tt.want == "") || !strings.Contains(got, tt.want) {
				t.Errorf("drift = %q, want %q", got, tt.want)
			}
			if v, ok := p.got["value"]; !ok || v.AsString() != "v1" {
				t.Errorf("the probe was given %v, want the recorded outputs", p.got)
			}
		})
	}
}
