package engine_test

import (
	"testing"

	"github.com/flowdev/flow/engine"
)

func TestSelects(t *testing.T) {
	for _, tc := range []struct {
		target, addr string
		want         bool
	}{
		{`exec.build`, `exec.build`, true},
		{`exec.build`, `exec.build["m1"]`, true},
		{`exec.build`, `exec.builder`, false},
		{`exec.build["m1"]`, `exec.build["m1"]`, true},
		{`exec.build["m1"]`, `exec.build["m10"]`, false},
		{`module.member`, `module.member["m1"].exec.x`, true},
		{`module.member["m1"]`, `module.member["m1"].exec.x["a"]`, true},
		{`module.member["m1"]`, `module.member["m2"].exec.x`, false},
		{`module.member["m1"].exec.x`, `module.member["m1"].exec.x["a"]`, true},
		{`module.mem`, `module.member["m1"].exec.x`, false},
	} {
		if got := engine.Selects(tc.target, tc.addr); got != tc.want {
			t.Errorf("Selects(%s, %s) = %v, want %v", tc.target, tc.addr, got, tc.want)
		}
	}
}
