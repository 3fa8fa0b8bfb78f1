package lxd

import (
	"errors"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/flowdev/flow/tasks"
)

// An existing instance meets a member target on that member only, and a group target
// on any member of the group; the difference names both. Offline: the groups come
// from a table, as GetClusterMember would give them (hence Validate in the name).
func TestTargetDiffValidate(t *testing.T) {
	groups := map[string][]string{"c1": {"default"}, "c2": {"default", "edge"}}
	lookup := func(member string) ([]string, error) {
		g, ok := groups[member]
		if !ok {
			return nil, errors.New("no member " + member)
		}
		return g, nil
	}
	tests := []struct {
		name, target, location string
		want, wantErr          string
	}{
		{"no target", "", "c1", "", ""},
		{"no target, not a cluster", "", "none", "", ""},
		{"on its member", "c2", "c2", "", ""},
		{"on another member", "c2", "c1", `target: instance is on member "c1", declared "c2"`, ""},
		{"in its group", "@edge", "c2", "", ""},
		{"outside its group", "@edge", "c1", `target: instance is on member "c1", which is not in cluster group "edge" (declared "@edge")`, ""},
		{"on an unknown member", "@edge", "c9", "", "no member c9"},
	}
	for _, tt := range tests {
		got, err := targetDiff(tt.target, tt.location, lookup)
		if got != tt.want || (err == nil) != (tt.wantErr == "") || (err != nil && err.Error() != tt.wantErr) {
			t.Errorf("%s: targetDiff(%q, %q) = %q, %v; want %q, %q", tt.name, tt.target, tt.location, got, err, tt.want, tt.wantErr)
		}
	}
}

// A launch probes the member only when its record names one: a standalone server's
// "none", an unknown value and a record from before the output existed cost no request.
func TestRecordedLocationValidate(t *testing.T) {
	tests := []struct {
		name     string
		recorded tasks.Outputs
		want     string
	}{
		{"a member", tasks.Outputs{"location": cty.StringVal("c2")}, "c2"},
		{"not a cluster", tasks.Outputs{"location": cty.StringVal("none")}, ""},
		{"no record", nil, ""},
		{"recorded before the output", tasks.Outputs{"name": cty.StringVal("m1")}, ""},
		{"unknown", tasks.Outputs{"location": cty.UnknownVal(cty.String)}, ""},
		{"null", tasks.Outputs{"location": cty.NullVal(cty.String)}, ""},
	}
	for _, tt := range tests {
		if got := recordedLocation(tt.recorded); got != tt.want {
			t.Errorf("%s: recordedLocation(%v) = %q, want %q", tt.name, tt.recorded, got, tt.want)
		}
	}
}
