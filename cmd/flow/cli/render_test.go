package cli

import (
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"
)

func TestRenderValue(t *testing.T) {
	long := strings.Repeat("x", 60)
	tests := []struct {
		name string
		v    cty.Value
		want string
	}{
		{"short list on one line", cty.ListVal([]cty.Value{cty.StringVal("a"), cty.StringVal("b")}), `["a", "b"]`},
		{"long list a line each", cty.TupleVal([]cty.Value{cty.StringVal(long), cty.StringVal(long)}),
			"[\n  \"" + long + "\",\n  \"" + long + "\",\n]"},
		{"long list of numbers as HCL", cty.ListVal([]cty.Value{cty.NumberIntVal(1)}), "[1]"},
		{"map as HCL", cty.MapVal(map[string]cty.Value{"k": cty.StringVal("v")}), "{\n  k = \"v\"\n}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := renderValue(tt.v); got != tt.want {
				t.Errorf("renderValue = %q, want %q", got, tt.want)
			}
		})
	}
}
