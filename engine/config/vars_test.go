package config_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/flowdev/flow/engine/config"
)

func writeFile(path, content string) error { return os.WriteFile(path, []byte(content), 0o644) }

func loadFlow(t *testing.T, path string) *config.Flow {
	t.Helper()
	flow, diags := config.Load(path, testRegistry(t))
	if diags.HasErrors() {
		t.Fatalf("Load(%s): %v", path, diags)
	}
	return flow
}

// TestVariablePrecedence: default < FLOW_VAR_ environment < --var-file (in order) < --var
// (in order); unrelated environment entries are ignored.
func TestVariablePrecedence(t *testing.T) {
	flow := loadFlow(t, valid("precedence.hcl"))
	file1 := filepath.Join("testdata", "vars", "file1.hcl")
	file2 := filepath.Join("testdata", "vars", "file2.hcl")
	fileJSON := filepath.Join("testdata", "vars", "file.json")
	env := []string{"FLOW_VAR_level=env", "FLOW_VAR_replicas=7", "FLOW_VAR_undeclared=x", "PATH=/bin", "FLOW_VAR_untyped"}
	tests := []struct {
		name string
		in   config.VarInputs
		want map[string]cty.Value
	}{
		{"defaults", config.VarInputs{}, map[string]cty.Value{
			"level": cty.StringVal("default"), "replicas": cty.NumberIntVal(1),
			"members": cty.SetVal([]cty.Value{cty.StringVal("a")}), "untyped": cty.StringVal("d")}},
		{"environment", config.VarInputs{Environ: env}, map[string]cty.Value{
			"level": cty.StringVal("env"), "replicas": cty.NumberIntVal(7)}},
		{"base below environment", config.VarInputs{
			Base:    map[string]cty.Value{"level": cty.StringVal("base"), "untyped": cty.StringVal("base"), "gone": cty.True},
			Environ: env}, map[string]cty.Value{
			"level": cty.StringVal("env"), "untyped": cty.StringVal("base")}},
		{"file over environment", config.VarInputs{Environ: env, Files: []string{file1}}, map[string]cty.Value{
			"level": cty.StringVal("file1"), "replicas": cty.NumberIntVal(2),
			"members": cty.SetVal([]cty.Value{cty.StringVal("b"), cty.StringVal("c")})}},
		{"later file wins", config.VarInputs{Environ: env, Files: []string{file1, file2, fileJSON}}, map[string]cty.Value{
			"level": cty.StringVal("file2"), "replicas": cty.NumberIntVal(5), "untyped": cty.StringVal("json")}},
		{"--var over files", config.VarInputs{Environ: env, Files: []string{file1, file2},
			Vars: []string{"level=cli", `members=["z"]`, "replicas=3", "level=last = wins"}}, map[string]cty.Value{
			"level": cty.StringVal("last = wins"), "replicas": cty.NumberIntVal(3),
			"members": cty.SetVal([]cty.Value{cty.StringVal("z")})}},
		// Text for a string variable is taken literally, not parsed as HCL.
		{"string taken literally", config.VarInputs{Vars: []string{`level=["x"]`, "untyped=1 + 1"}}, map[string]cty.Value{
			"level": cty.StringVal(`["x"]`), "untyped": cty.StringVal("1 + 1")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, diags := flow.Assign(tt.in)
			if len(diags) > 0 {
				t.Fatalf("diags: %v", diags)
			}
			if len(got) != 4 {
				t.Errorf("got %d variables: %#v", len(got), got)
			}
			for name, w := range tt.want {
				if !got[name].RawEquals(w) {
					t.Errorf("%s = %#v, want %#v", name, got[name], w)
				}
			}
		})
	}
}

func TestAssignErrors(t *testing.T) {
	flow := loadFlow(t, valid("precedence.hcl"))
	tests := []struct {
		name string
		in   config.VarInputs
		want []string
	}{
		// The variable, the type it wants and the text given, with no range in a file
		// that does not exist ("--var replicas", "source code not available").
		{"number from text", config.VarInputs{Vars: []string{"replicas=three"}},
			[]string{`--var replicas: variable "replicas" wants a number; "three" is not one`}},
		{"wrong type from environment", config.VarInputs{Environ: []string{`FLOW_VAR_replicas="x"`}},
			[]string{`environment variable FLOW_VAR_replicas: variable "replicas" wants a number; "\"x\"" is not one (a number is required)`}},
		{"syntax error in --var", config.VarInputs{Vars: []string{"members=[1"}},
			[]string{`--var members: variable "members" wants a value of type set(string); "[1" is not one (Unterminated tuple`}},
		{"missing var file", config.VarInputs{Files: []string{"testdata/vars/missing.hcl"}}, []string{"Cannot read variables file"}},
		{"all in one pass", config.VarInputs{Vars: []string{"nope=1", "members=3", "broken"}},
			[]string{`declares no variable "nope"`, `variable "members" wants a value of type set(string)`, `expected NAME=VALUE`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, diags := flow.Assign(tt.in)
			if len(diags.Errs()) != len(tt.want) {
				t.Errorf("%d errors, want %d: %v", len(diags.Errs()), len(tt.want), diags)
			}
			for _, d := range diags {
				if d.Subject != nil && strings.HasPrefix(d.Subject.Filename, "--var") {
					t.Errorf("diagnostic points into %q, which is no file: %v", d.Subject.Filename, d)
				}
			}
			for _, w := range tt.want {
				if !strings.Contains(describe(diags), w) {
					t.Errorf("diags lack %q:\n%s", w, describe(diags))
				}
			}
		})
	}
}

func TestSensitiveVariables(t *testing.T) {
	flow := loadFlow(t, valid("sensitive.hcl"))
	if !flow.Variables["token"].Sensitive || flow.Variables["public"].Sensitive {
		t.Fatal("Sensitive flags not decoded")
	}
	for _, in := range []config.VarInputs{
		{},
		{Vars: []string{"token=given-on-cli"}},
		{Environ: []string{"FLOW_VAR_token=from-env"}},
	} {
		vars, diags := flow.Assign(in)
		if diags.HasErrors() {
			t.Fatal(diags)
		}
		if !vars["token"].HasMark(config.Sensitive) || !vars["pins"].HasMark(config.Sensitive) {
			t.Errorf("%+v: sensitive variables are not marked: %#v", in, vars)
		}
		if vars["public"].ContainsMarked() {
			t.Errorf("%+v: public variable is marked", in)
		}
	}

	// A wrong value for a sensitive variable is not echoed in the error.
	_, diags := flow.Assign(config.VarInputs{Vars: []string{"pins=[98765"}})
	if msg := describe(diags); !strings.Contains(msg, `variable "pins" wants`) || strings.Contains(msg, "98765") {
		t.Errorf("error for a sensitive --var: %s", msg)
	}

	vars, _ := flow.Assign(config.VarInputs{})
	scope, diags := flow.NewScope(vars)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	// Marks flow into values derived from a secret.
	if !scope.Locals["header"].HasMark(config.Sensitive) {
		t.Error("local derived from a sensitive variable is not marked")
	}
	// Every text form of a secret, longest first; values shorter than 4 are left alone.
	wantSecrets := []string{"s3cr3t-token", "12345"}
	if strings.Join(scope.Secrets, "|") != strings.Join(wantSecrets, "|") {
		t.Errorf("Secrets = %q, want %q", scope.Secrets, wantSecrets)
	}
	tests := []struct{ in, want string }{
		{"Authorization: Bearer s3cr3t-token", "Authorization: Bearer (sensitive)"},
		{"pin 12345 and 7 and s3cr3t-token twice s3cr3t-token", "pin (sensitive) and 7 and (sensitive) twice (sensitive)"},
		{"not-a-secret stays", "not-a-secret stays"},
		{"", ""},
	}
	for _, tt := range tests {
		if got := scope.Redact(tt.in); got != tt.want {
			t.Errorf("Redact(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestRedactLongestFirst: a secret that contains another is replaced whole.
func TestRedactLongestFirst(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f.hcl")
	if err := writeFile(p, `
variable "short" {
  sensitive = true
}
variable "long" {
  sensitive = true
}
variable "map" {
  sensitive = true
  type      = map(string)
  default   = { a = "alpha-secret", b = "no" }
}
task "exec" "a" {
  command = ["true"]
}
`); err != nil {
		t.Fatal(err)
	}
	flow := loadFlow(t, p)
	vars, diags := flow.Assign(config.VarInputs{Vars: []string{"short=pass", "long=password123"}})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	scope, _ := flow.NewScope(vars)
	if got := scope.Redact("password123 pass alpha-secret no"); got != "(sensitive) (sensitive) (sensitive) no" {
		t.Errorf("Redact = %q", got)
	}
}
