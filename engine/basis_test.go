package engine

import (
	"errors"
	"testing"

	"github.com/flowdev/flow/engine/state"
)

// TestBasisOf pins the table Run follows and Preview shows, row by row.
func TestBasisOf(t *testing.T) {
	const flow, other = "/p/flow.hcl", "/p/other.hcl"
	run := func(f string, status state.Status, destroys uint64) *state.Run {
		return &state.Run{ID: 7, Flow: f, Status: status, Destroys: destroys}
	}
	targets := []string{"exec.a"}
	cases := []struct {
		name   string
		latest *state.Run
		req    Request
		want   basisKind
		from   bool // starts from latest's records
		last   bool // names latest in its reasons
		refuse bool
		err    bool
	}{
		{name: "no run", want: startNew},
		{name: "another flow's run", latest: run(other, state.Succeeded, 0), err: true},
		{name: "another flow's run, --move", latest: run(other, state.Succeeded, 0), req: Request{Move: true}, want: startNew, last: true},
		{name: "another flow's destroy that succeeded", latest: run(other, state.Succeeded, 3), want: startNew},
		{name: "a destroy that succeeded", latest: run(flow, state.Succeeded, 3), want: startNew, last: true},
		{name: "a destroy that failed", latest: run(flow, state.Failed, 3), want: startNew, last: true, refuse: true},
		{name: "a destroy that failed, --new", latest: run(flow, state.Failed, 3), req: Request{New: true}, want: startNew, last: true},
		{name: "succeeded", latest: run(flow, state.Succeeded, 0), want: startNew, last: true},
		{name: "succeeded, --target", latest: run(flow, state.Succeeded, 0), req: Request{Targets: targets}, want: startFromCheckpoints, from: true},
		{name: "targets done, the rest pending", latest: run(flow, state.Pending, 0), want: startNew, last: true},
		{name: "failed", latest: run(flow, state.Failed, 0), want: startResume, from: true, refuse: true},
		{name: "interrupted, --replace", latest: run(flow, state.Interrupted, 0), req: Request{Replace: targets}, want: startResume, from: true, refuse: true},
		{name: "failed, --new --target", latest: run(flow, state.Failed, 0), req: Request{New: true, Targets: targets}, want: startFromCheckpoints, from: true},
		{name: "failed, --new", latest: run(flow, state.Failed, 0), req: Request{New: true}, want: startNew, last: true},
	}
	s := &Session{path: "s.db"}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.req.Flow = flow
			b, err := s.basisOf(tc.latest, &tc.req)
			if tc.err {
				if !errors.As(err, new(*OtherFlowError)) {
					t.Fatalf("err %v, want an *OtherFlowError", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if b.kind != tc.want || (b.from != nil) != tc.from || (b.last != nil) != tc.last || b.refused != tc.refuse {
				t.Errorf("basis %+v, want kind %d, from %t, last %t, refused %t", b, tc.want, tc.from, tc.last, tc.refuse)
			}
		})
	}
}
