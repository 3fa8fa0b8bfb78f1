package config

import (
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/ext/tryfunc"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	yaml "github.com/zclconf/go-cty-yaml"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
	"github.com/zclconf/go-cty/cty/function/stdlib"
)

// Functions returns the functions a flow may call: the go-cty stdlib set under
// Terraform's names, yaml, try/can, and file, templatefile and env. Relative paths in
// file and templatefile resolve against baseDir, the flow's directory, so a flow works
// from any current directory.
func Functions(baseDir string) map[string]function.Function {
	fns := map[string]function.Function{
		"abs": stdlib.AbsoluteFunc, "ceil": stdlib.CeilFunc, "floor": stdlib.FloorFunc,
		"log": stdlib.LogFunc, "max": stdlib.MaxFunc, "min": stdlib.MinFunc,
		"parseint": stdlib.ParseIntFunc, "pow": stdlib.PowFunc, "signum": stdlib.SignumFunc,
		"chomp": stdlib.ChompFunc, "format": stdlib.FormatFunc, "formatlist": stdlib.FormatListFunc,
		"indent": stdlib.IndentFunc, "join": stdlib.JoinFunc, "lower": stdlib.LowerFunc,
		"upper": stdlib.UpperFunc, "regex": stdlib.RegexFunc, "regexall": stdlib.RegexAllFunc,
		"replace": stdlib.ReplaceFunc, "regexreplace": stdlib.RegexReplaceFunc,
		"split": stdlib.SplitFunc, "strrev": stdlib.ReverseFunc, "strlen": stdlib.StrlenFunc,
		"substr": stdlib.SubstrFunc, "title": stdlib.TitleFunc, "trim": stdlib.TrimFunc,
		"trimprefix": stdlib.TrimPrefixFunc, "trimsuffix": stdlib.TrimSuffixFunc,
		"trimspace": stdlib.TrimSpaceFunc, "chunklist": stdlib.ChunklistFunc,
		"coalesce": stdlib.CoalesceFunc, "coalescelist": stdlib.CoalesceListFunc,
		"compact": stdlib.CompactFunc, "concat": stdlib.ConcatFunc, "contains": stdlib.ContainsFunc,
		"distinct": stdlib.DistinctFunc, "element": stdlib.ElementFunc, "flatten": stdlib.FlattenFunc,
		"index": stdlib.IndexFunc, "keys": stdlib.KeysFunc, "length": lengthFunc,
		"lookup": stdlib.LookupFunc, "merge": stdlib.MergeFunc, "range": stdlib.RangeFunc,
		"reverse": stdlib.ReverseListFunc, "setintersection": stdlib.SetIntersectionFunc,
		"setproduct": stdlib.SetProductFunc, "setsubtract": stdlib.SetSubtractFunc,
		"setunion": stdlib.SetUnionFunc, "slice": stdlib.SliceFunc, "sort": stdlib.SortFunc,
		"values": stdlib.ValuesFunc, "zipmap": stdlib.ZipmapFunc,
		"jsonencode": stdlib.JSONEncodeFunc, "jsondecode": stdlib.JSONDecodeFunc,
		"csvdecode": stdlib.CSVDecodeFunc, "formatdate": stdlib.FormatDateFunc,
		"timeadd":    stdlib.TimeAddFunc,
		"yamlencode": yaml.YAMLEncodeFunc, "yamldecode": yaml.YAMLDecodeFunc,
		"tostring": stdlib.MakeToFunc(cty.String), "tonumber": stdlib.MakeToFunc(cty.Number),
		"tobool": stdlib.MakeToFunc(cty.Bool),
		"tolist": stdlib.MakeToFunc(cty.List(cty.DynamicPseudoType)),
		"toset":  toSetFunc,
		"tomap":  stdlib.MakeToFunc(cty.Map(cty.DynamicPseudoType)),
		"try":    tryfunc.TryFunc, "can": tryfunc.CanFunc,
		"env":      envFunc,
		"file":     fileFunc(baseDir),
		"basename": pathFunc("Returns the last element of a path.", filepath.Base),
		"dirname":  pathFunc("Returns all but the last element of a path.", filepath.Dir),
		"base64encode": stringFunc("Returns the standard base64 encoding of a string's UTF-8 bytes.",
			func(s string) (string, error) { return base64.StdEncoding.EncodeToString([]byte(s)), nil }),
		"base64decode": stringFunc("Decodes standard base64; the result must be UTF-8 text.", decodeBase64),
	}
	// templatefile sees every function but itself, so a template cannot recurse.
	plain := make(map[string]function.Function, len(fns))
	for k, v := range fns {
		plain[k] = v
	}
	fns["templatefile"] = templateFileFunc(baseDir, plain)
	return fns
}

var envFunc = function.New(&function.Spec{
	Description: "Returns the value of an environment variable of the flow process, or \"\" when unset.",
	Params:      []function.Parameter{{Name: "name", Type: cty.String}},
	Type:        function.StaticReturnType(cty.String),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		return cty.StringVal(os.Getenv(args[0].AsString())), nil
	},
})

// pathFunc wraps a pure string-to-string path function, as Terraform's basename and
// dirname: the path is not resolved and need not exist.
func pathFunc(doc string, fn func(string) string) function.Function {
	return function.New(&function.Spec{
		Description: doc,
		Params:      []function.Parameter{{Name: "path", Type: cty.String}},
		Type:        function.StaticReturnType(cty.String),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			return cty.StringVal(fn(args[0].AsString())), nil
		},
	})
}

func resolve(baseDir, p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(baseDir, p)
}

func fileFunc(baseDir string) function.Function {
	return function.New(&function.Spec{
		Description: "Reads a file as a UTF-8 string; a relative path is relative to the flow's directory.",
		Params:      []function.Parameter{{Name: "path", Type: cty.String}},
		Type:        function.StaticReturnType(cty.String),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			b, err := os.ReadFile(resolve(baseDir, args[0].AsString()))
			if err != nil {
				return cty.NilVal, err
			}
			return cty.StringVal(string(b)), nil
		},
	})
}

func templateFileFunc(baseDir string, fns map[string]function.Function) function.Function {
	return function.New(&function.Spec{
		Description: "Renders a file as an HCL template with the given variables.",
		Params: []function.Parameter{
			{Name: "path", Type: cty.String},
			{Name: "vars", Type: cty.DynamicPseudoType},
		},
		Type: function.StaticReturnType(cty.String),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			path := resolve(baseDir, args[0].AsString())
			src, err := os.ReadFile(path)
			if err != nil {
				return cty.NilVal, err
			}
			if diags := CheckNesting(src, path, TemplateSyntax); diags.HasErrors() {
				return cty.NilVal, fmt.Errorf("parse template %s: %w", path, diags)
			}
			expr, diags := hclsyntax.ParseTemplate(src, path, hcl.InitialPos)
			if diags.HasErrors() {
				return cty.NilVal, fmt.Errorf("parse template %s: %w", path, diags)
			}
			vars := args[1]
			if !vars.Type().IsObjectType() && !vars.Type().IsMapType() {
				return cty.NilVal, function.NewArgErrorf(1, "vars must be a map or object")
			}
			ctx := &hcl.EvalContext{Variables: map[string]cty.Value{}, Functions: fns}
			for it := vars.ElementIterator(); it.Next(); {
				k, v := it.Element()
				ctx.Variables[k.AsString()] = v
			}
			val, diags := expr.Value(ctx)
			if diags.HasErrors() {
				return cty.NilVal, fmt.Errorf("render template %s: %w", path, diags)
			}
			return val, nil
		},
	})
}

var genericToSet = stdlib.MakeToFunc(cty.Set(cty.DynamicPseudoType))

// toSetFunc is toset with a fast path for a tuple whose elements share one primitive
// type, the common `for_each = toset([...])`: cty's generic conversion unifies element
// types pairwise, which takes about a second for 10,000 keys.
var toSetFunc = function.New(&function.Spec{
	Description: "Converts its argument to a set.",
	Params: []function.Parameter{{Name: "v", Type: cty.DynamicPseudoType,
		AllowNull: true, AllowUnknown: true, AllowDynamicType: true, AllowMarked: true}},
	Type: func(args []cty.Value) (cty.Type, error) {
		if ty, ok := uniformTuple(args[0]); ok {
			return cty.Set(ty), nil
		}
		return genericToSet.ReturnTypeForValues(args)
	},
	Impl: func(args []cty.Value, retType cty.Type) (cty.Value, error) {
		v := args[0]
		if _, ok := uniformTuple(v); !ok || !v.IsWhollyKnown() || v.ContainsMarked() {
			return genericToSet.Call(args)
		}
		if v.LengthInt() == 0 {
			return cty.SetValEmpty(retType.ElementType()), nil
		}
		return cty.SetVal(v.AsValueSlice()), nil
	},
})

// uniformTuple reports the element type of a non-null tuple whose elements all have
// the same primitive type.
func uniformTuple(v cty.Value) (cty.Type, bool) {
	ty := v.Type()
	if !ty.IsTupleType() || v.IsNull() {
		return cty.NilType, false
	}
	elems := ty.TupleElementTypes()
	if len(elems) == 0 || !elems[0].IsPrimitiveType() {
		return cty.NilType, false
	}
	for _, e := range elems[1:] {
		if !e.Equals(elems[0]) {
			return cty.NilType, false
		}
	}
	return elems[0], true
}

// lengthFunc is length that also counts an object's attributes, as Terraform's does:
// a whole for_each task, such as length(exec.member), is an object.
var lengthFunc = function.New(&function.Spec{
	Description: "Returns the number of elements of a collection, or the length of a string.",
	Params: []function.Parameter{{Name: "value", Type: cty.DynamicPseudoType,
		AllowUnknown: true, AllowDynamicType: true, AllowMarked: true}},
	Type: function.StaticReturnType(cty.Number),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		v, marks := args[0].Unmark()
		if v.Type().IsObjectType() {
			return cty.NumberIntVal(int64(len(v.Type().AttributeTypes()))).WithMarks(marks), nil
		}
		if v.Type() == cty.String {
			return stdlib.Strlen(args[0])
		}
		return stdlib.Length(args[0])
	},
})

// stringFunc wraps a string -> string function for HCL; marks (sensitive) carry over.
func stringFunc(desc string, f func(string) (string, error)) function.Function {
	return function.New(&function.Spec{
		Description: desc,
		Params:      []function.Parameter{{Name: "str", Type: cty.String}},
		Type:        function.StaticReturnType(cty.String),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			out, err := f(args[0].AsString())
			if err != nil {
				return cty.UnknownVal(cty.String), err
			}
			return cty.StringVal(out), nil
		},
	})
}

func decodeBase64(s string) (string, error) {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return "", fmt.Errorf("not valid base64: %w", err)
	}
	if !utf8.Valid(b) {
		return "", errors.New("the decoded bytes are not UTF-8 text")
	}
	return string(b), nil
}
