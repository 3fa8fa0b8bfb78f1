package config

import (
	"testing"

	"github.com/zclconf/go-cty/cty"
)

func TestToSetMatchesGeneric(t *testing.T) {
	tests := map[string]cty.Value{
		"strings":    cty.TupleVal([]cty.Value{cty.StringVal("b"), cty.StringVal("a"), cty.StringVal("b")}),
		"numbers":    cty.TupleVal([]cty.Value{cty.NumberIntVal(1), cty.NumberIntVal(2)}),
		"mixed":      cty.TupleVal([]cty.Value{cty.StringVal("a"), cty.NumberIntVal(2)}),
		"empty":      cty.EmptyTupleVal,
		"list":       cty.ListVal([]cty.Value{cty.StringVal("x")}),
		"unknown":    cty.TupleVal([]cty.Value{cty.StringVal("a"), cty.UnknownVal(cty.String)}),
		"marked":     cty.TupleVal([]cty.Value{cty.StringVal("a").Mark(Sensitive), cty.StringVal("b")}),
		"objects":    cty.TupleVal([]cty.Value{cty.ObjectVal(map[string]cty.Value{"a": cty.True})}),
		"null tuple": cty.NullVal(cty.Tuple([]cty.Type{cty.String})),
	}
	for name, in := range tests {
		t.Run(name, func(t *testing.T) {
			want, wantErr := genericToSet.Call([]cty.Value{in})
			got, gotErr := toSetFunc.Call([]cty.Value{in})
			if (wantErr == nil) != (gotErr == nil) {
				t.Fatalf("error = %v, generic toset error = %v", gotErr, wantErr)
			}
			if wantErr == nil && !got.RawEquals(want) {
				t.Errorf("toset = %#v, generic = %#v", got, want)
			}
		})
	}
}
