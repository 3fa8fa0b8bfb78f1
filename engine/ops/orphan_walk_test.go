package ops

import (
	"testing"

	"github.com/flowdev/flow/engine/state"
	"github.com/flowdev/flow/tasks"
)

// TestOrphanPlan: the graph a walk of orphans follows is the dependencies their
// records name, among orphans; one record without them (an older flow) makes the walk
// a chain in the orphans' order.
func TestOrphanPlan(t *testing.T) {
	rec := func(addr string, deps ...string) Orphan {
		return Orphan{Run: 1, Rec: &state.Instance{Address: addr, Type: "exec", Deps: deps, DepsKnown: true}}
	}
	old := Orphan{Run: 1, Rec: &state.Instance{Address: "c", Type: "exec"}}
	cases := []struct {
		name    string
		orphans []Orphan
		want    string
	}{{
		name:    "recorded dependencies, one outside the orphans",
		orphans: []Orphan{rec("b", "a", "kept"), rec("a"), rec("x")},
		want:    "a\nb\n  a\nx\n",
	}, {
		name:    "one recorded without them: a chain, first undone first",
		orphans: []Orphan{rec("b", "a"), rec("a"), old},
		want:    "a\n  c\nb\n  a\nc\n",
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, _ := orphanPlan(tc.orphans, tasks.NewRegistry(), nil)
			if got := p.Graph.String(); got != tc.want {
				t.Errorf("graph:\n%s\nwant:\n%s", got, tc.want)
			}
		})
	}
}
