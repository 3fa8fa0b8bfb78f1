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

func TestLength(t *testing.T) {
	tests := map[string]struct {
		in   cty.Value
		want int64
	}{
		"object (a whole for_each task)": {cty.ObjectVal(map[string]cty.Value{"a": cty.True, "b": cty.False}), 2},
		"empty object":                   {cty.EmptyObjectVal, 0},
		"list":                           {cty.ListVal([]cty.Value{cty.StringVal("x")}), 1},
		"string":                         {cty.StringVal("héllo"), 5},
	}
	for name, tt := range tests {
		got, err := lengthFunc.Call([]cty.Value{tt.in})
		if err != nil || !got.RawEquals(cty.NumberIntVal(tt.want)) {
			t.Errorf("%s: length = %#v, %v; want %d", name, got, err, tt.want)
		}
	}
	got, err := lengthFunc.Call([]cty.Value{cty.EmptyObjectVal.Mark(Sensitive)})
	if err != nil || !got.HasMark(Sensitive) {
		t.Errorf("marked object: %#v, %v; want a marked 0", got, err)
	}
}
