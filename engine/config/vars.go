package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/ext/typeexpr"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
)

// VarInputs are the sources of variable values, lowest precedence first: Base (the
// values recorded by the run being resumed), FLOW_VAR_name in Environ, each file of
// Files in order, then each NAME=VALUE of Vars in order.
type VarInputs struct {
	Base    map[string]cty.Value
	Environ []string
	Files   []string
	Vars    []string
	// Partial makes a variable without a value unknown instead of an error, for
	// checking a flow before its values are at hand.
	Partial bool
}

// Assign computes every variable's value. A value given as text (environment or
// --var) is taken literally for string variables and parsed as an HCL expression for
// other types. Sensitive values are marked with Sensitive. A required variable with no
// value is an error on its declaration.
func (f *Flow) Assign(in VarInputs) (map[string]cty.Value, hcl.Diagnostics) {
	raw := map[string]cty.Value{}
	var diags hcl.Diagnostics
	for k, v := range in.Base {
		if _, ok := f.Variables[k]; ok {
			raw[k] = v
		}
	}
	for _, kv := range in.Environ {
		name, text, ok := strings.Cut(kv, "=")
		if !ok || !strings.HasPrefix(name, "FLOW_VAR_") {
			continue
		}
		name = strings.TrimPrefix(name, "FLOW_VAR_")
		if v, ok := f.Variables[name]; ok { // unknown names are ignored: the environment is shared
			val, d := parseText(v, text, "environment variable FLOW_VAR_"+name)
			diags = append(diags, d...)
			raw[name] = val
		}
	}
	for _, file := range in.Files {
		vals, d := f.readVarFile(file)
		diags = append(diags, d...)
		for k, v := range vals {
			raw[k] = v
		}
	}
	for _, kv := range in.Vars {
		name, text, ok := strings.Cut(kv, "=")
		v, declared := f.Variables[name]
		switch {
		case !ok:
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid --var",
				Detail: fmt.Sprintf("--var %q: expected NAME=VALUE.", kv)})
			continue
		case !declared:
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Undeclared variable",
				Detail: fmt.Sprintf("--var %s: the flow declares no variable %q.%s", name, name, suggest(name, keys(f.Variables)))})
			continue
		}
		val, d := parseText(v, text, "--var "+name)
		diags = append(diags, d...)
		raw[name] = val
	}
	return f.finishVars(raw, in.Partial, diags)
}

func (f *Flow) finishVars(raw map[string]cty.Value, partial bool, diags hcl.Diagnostics) (map[string]cty.Value, hcl.Diagnostics) {
	out := map[string]cty.Value{}
	f.defaulted = map[string]bool{}
	for _, name := range keys(f.Variables) {
		v := f.Variables[name]
		val, given := raw[name]
		switch {
		case given:
		case v.HasDefault:
			val, f.defaulted[name] = v.Default, true
		case partial:
			val = cty.UnknownVal(v.Type)
		default:
			diags = append(diags, errorf(v.DeclRange, "Missing required variable",
				"Variable %q has no default and no value; set it with --var %s=VALUE, --var-file, or FLOW_VAR_%s.", name, name, name))
			out[name] = cty.UnknownVal(v.Type) // reported: later phases see an unknown value
			continue
		}
		conv, err := v.Convert(val)
		if err != nil {
			diags = append(diags, errorf(v.DeclRange, "Invalid value for variable",
				"The value given for %q does not match its type: %s.", name, err))
			out[name] = cty.UnknownVal(v.Type)
			continue
		}
		out[name] = conv
	}
	return out, diags
}

// parseText reads text given for v outside any file (a --var or FLOW_VAR_ value,
// named by source): literally for a string variable, else as an HCL expression of
// v's type. A value that is not one is an error naming the source, the type wanted
// and the text given (unless v is sensitive), with no source range: there is no file
// to show.
func parseText(v *Variable, text, source string) (cty.Value, hcl.Diagnostics) {
	if v.Type == cty.String || v.Type == cty.DynamicPseudoType {
		return cty.StringVal(text), nil
	}
	if diags := CheckNesting([]byte(text), source, ConfigSyntax); diags.HasErrors() {
		return cty.DynamicVal, diags
	}
	expr, diags := hclsyntax.ParseExpression([]byte(text), source, hcl.InitialPos)
	if diags.HasErrors() {
		return cty.DynamicVal, textError(v, text, source, diags[0].Summary+": "+diags[0].Detail)
	}
	val, diags := expr.Value(nil)
	if diags.HasErrors() {
		why := "it is not a value"
		if len(expr.Variables()) > 0 {
			why = "a word without quotes is no value here; give the value itself, written as in HCL"
		}
		return cty.DynamicVal, textError(v, text, source, why)
	}
	if _, err := convert.Convert(val, v.Type); err != nil {
		return cty.DynamicVal, textError(v, text, source, err.Error())
	}
	return val, nil
}

// textError is parseText's error for text that is not a value of v's type.
func textError(v *Variable, text, source, why string) hcl.Diagnostics {
	given := fmt.Sprintf("%q", text)
	if v.Sensitive {
		given = "the value given (sensitive, not shown)"
	}
	return hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Invalid value for variable",
		Detail: fmt.Sprintf("%s: variable %q wants %s; %s is not one (%s).",
			source, v.Name, typeName(v.Type), given, strings.TrimSuffix(why, "."))}}
}

// typeName is t as a message says it: "a number", "a value of type list(string)".
func typeName(t cty.Type) string {
	if t.IsPrimitiveType() {
		return "a " + typeexpr.TypeString(t)
	}
	return "a value of type " + typeexpr.TypeString(t)
}

func (f *Flow) readVarFile(path string) (map[string]cty.Value, hcl.Diagnostics) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Cannot read variables file", Detail: err.Error()}}
	}
	if diags := CheckNesting(src, path, ConfigSyntax); diags.HasErrors() {
		return nil, diags
	}
	p := hclparse.NewParser()
	var file *hcl.File
	var diags hcl.Diagnostics
	if strings.EqualFold(filepath.Ext(path), ".json") {
		file, diags = p.ParseJSON(src, path)
	} else {
		file, diags = p.ParseHCL(src, path)
	}
	if diags.HasErrors() {
		return nil, diags
	}
	attrs, diags := file.Body.JustAttributes()
	out := map[string]cty.Value{}
	for name, a := range attrs {
		v, ok := f.Variables[name]
		if !ok {
			diags = append(diags, errorf(a.NameRange, "Undeclared variable",
				"The flow declares no variable %q.%s", name, suggest(name, keys(f.Variables))))
			continue
		}
		val, d := a.Expr.Value(nil)
		diags = append(diags, d...)
		if _, err := convert.Convert(val, v.Type); err != nil && !d.HasErrors() {
			// Report a wrong type on the value in the file, not on the declaration; a
			// sensitive one by its line, which is not shown.
			d := errorf(a.Expr.Range(), "Invalid value for variable",
				"The value given for %q does not match its type: %s.", name, err)
			if v.Sensitive {
				d.Detail = fmt.Sprintf("%s:%d: the value given for sensitive variable %q (not shown) does not match its type: %s.",
					path, a.Expr.Range().Start.Line, name, err)
				d.Subject = nil
			}
			diags = append(diags, d)
			continue
		}
		out[name] = val
	}
	return out, diags
}

// Convert converts a value given for v to v's type, marked when v is sensitive.
func (v *Variable) Convert(val cty.Value) (cty.Value, error) {
	conv, err := convert.Convert(val, v.Type)
	if err != nil {
		return cty.DynamicVal, err
	}
	if v.Sensitive {
		conv = conv.Mark(Sensitive)
	}
	return conv, nil
}
