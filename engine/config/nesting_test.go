package config_test

import (
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/flowdev/flow/engine/config"
)

func deep(open, close string, n int) string {
	return strings.Repeat(open, n) + strings.Repeat(close, n)
}

// TestCheckNesting: what counts as nesting and what does not, and where the
// diagnostic points: at the opening that crosses config.MaxNesting.
func TestCheckNesting(t *testing.T) {
	max := config.MaxNesting
	for _, tt := range []struct {
		name   string
		syntax config.Syntax
		src    string
		// line and column of the opening that crosses the limit; 0 when within it.
		line, col int
	}{
		{"at the limit", config.ConfigSyntax, "x = " + deep("[", "]", max) + "\n", 0, 0},
		{"one past the limit", config.ConfigSyntax, "x = " + deep("[", "]", max+1) + "\n", 1, 5 + max},
		{"a block is a level", config.ConfigSyntax, "locals {\n x = " + deep("[", "]", max) + "\n}\n", 2, 5 + max},
		{"every kind of bracket", config.ConfigSyntax, "x = " + deep("([{", "}])", max/3+1) + "\n", 1, 5 + max},
		{"the crash of issue 20", config.ConfigSyntax, "locals {\n x = " + deep("[", "]", 100000) + "\n}\n", 2, 5 + max},
		{"after multibyte text, columns count characters", config.ConfigSyntax,
			"# ünïcödé\nx = \"äöü\" == " + deep("(", ")", max+5) + "\n", 2, 14 + max},
		{"hash comment", config.ConfigSyntax, "# " + strings.Repeat("[", 5000) + "\nx = 1\n", 0, 0},
		{"slash comment", config.ConfigSyntax, "x = 1 // " + strings.Repeat("{", 5000) + "\n", 0, 0},
		{"block comment", config.ConfigSyntax, "/* " + strings.Repeat("(", 5000) + "\n*/ x = 1\n", 0, 0},
		{"string text", config.ConfigSyntax, `x = "` + strings.Repeat("[", 5000) + "\"\n", 0, 0},
		{"escaped quote", config.ConfigSyntax, `x = "\"` + strings.Repeat("[", 5000) + "\"\n", 0, 0},
		{"escaped interpolation", config.ConfigSyntax, `x = "` + strings.Repeat("$${", 5000) + "\"\n", 0, 0},
		{"heredoc text", config.ConfigSyntax, "x = <<EOT\n" + strings.Repeat("[", 5000) + "\nEOT\ny = 1\n", 0, 0},
		{"indented heredoc", config.ConfigSyntax, "x = <<-EOT\n  " + strings.Repeat("{", 5000) + "\n  EOT\n", 0, 0},
		{"after a heredoc, code again", config.ConfigSyntax, "x = <<EOT\n[[\nEOT\ny = " + deep("[", "]", max+1) + "\n", 4, 5 + max},
		// A string and its interpolation are two levels.
		{"interpolations nest", config.ConfigSyntax, "x = " + deep(`"${`, `}"`, max/2+1) + "\n", 1, 5 + 3*(max/2)},
		{"interpolation in a heredoc", config.ConfigSyntax, "x = <<EOT\n${" + deep("[", "]", max) + "}\nEOT\n", 2, 3 + max - 2},
		{"JSON", config.ConfigSyntax, `{"x": ` + deep("[", "]", max) + "}\n", 1, 7 + max - 1},
		{"template text", config.TemplateSyntax, strings.Repeat("[", 5000) + "\n", 0, 0},
		{"template interpolation", config.TemplateSyntax, "hello ${" + deep("[", "]", max) + "}\n", 1, 9 + max - 1},
		{"template directive", config.TemplateSyntax, "%{ if " + deep("(", ")", max) + " }x%{ endif }\n", 1, 7 + max - 1},
		{"unterminated comment", config.ConfigSyntax, "/* " + strings.Repeat("[", 5000), 0, 0},
		{"unterminated string", config.ConfigSyntax, `x = "` + strings.Repeat("[", 5000) + "\ny = " + deep("[", "]", 3), 0, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			diags := config.CheckNesting([]byte(tt.src), "f.hcl", tt.syntax)
			if tt.line == 0 {
				if len(diags) != 0 {
					t.Fatalf("unexpected: %v", diags)
				}
				return
			}
			if len(diags) != 1 || diags[0].Severity != hcl.DiagError || diags[0].Summary != "Nesting too deep" {
				t.Fatalf("diagnostics %v, want one Nesting too deep", diags)
			}
			s := diags[0].Subject
			if s.Filename != "f.hcl" || s.Start.Line != tt.line || s.Start.Column != tt.col {
				t.Errorf("at %s, want f.hcl:%d,%d", s, tt.line, tt.col)
			}
			if opening := tt.src[s.Start.Byte:s.End.Byte]; !strings.ContainsAny(opening[:1], "([{\"$%") {
				t.Errorf("the range %s holds %q, not an opening", s, opening)
			}
		})
	}
}

// TestCheckNestingLinear: the check reads any input in time linear in its size.
func TestCheckNestingLinear(t *testing.T) {
	for _, src := range []string{
		strings.Repeat(`"${`, 300000), strings.Repeat("<<EOT\n", 200000), strings.Repeat("/*", 500000),
		strings.Repeat("[", 1000000), strings.Repeat(`\`, 1000000),
	} {
		began := time.Now()
		config.CheckNesting([]byte(src), "f.hcl", config.ConfigSyntax)
		config.CheckNesting([]byte(src), "f.hcl", config.TemplateSyntax)
		if took := time.Since(began); took > 2*time.Second {
			t.Errorf("%q...: %s", src[:10], took)
		}
	}
}

// TestDeepFlowRefused: the file of issue 20 (a locals block nested 100,000 brackets
// deep, which killed flow with a stack overflow in HCL's parser) is one diagnostic on
// the bracket that crosses the limit.
func TestDeepFlowRefused(t *testing.T) {
	path := filepath.Join("testdata", "deep", "locals.hcl")
	_, diags := config.Load(path, testRegistry(t))
	if len(diags) != 1 || diags[0].Summary != "Nesting too deep" {
		t.Fatalf("diagnostics:\n%s", describe(diags))
	}
	if s := diags[0].Subject; s.Filename != path || s.Start.Line != 2 || s.Start.Column != 5+config.MaxNesting {
		t.Errorf("at %s, want %s:2,%d", s, path, 5+config.MaxNesting)
	}
}

// TestDeepInputsRefused: a variables file, a --var value, a FLOW_VAR_ value and a
// template nested too deep are refused the same way before HCL parses them. Each is
// tried in a child process (the test binary run again), so a guard that lets one
// through fails this test with the child's death instead of killing the test binary
// with a stack overflow no recover catches.
func TestDeepInputsRefused(t *testing.T) {
	dir := t.TempDir()
	flow := filepath.Join(dir, "main.hcl")
	write := func(path, src string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(flow, "variable \"v\" {\n  type = list(any)\n  default = [1]\n}\n\nlocals {\n  t = templatefile(\"deep.tmpl\", {})\n}\n")
	write(filepath.Join(dir, "deep.tmpl"), "${"+deep("[", "]", 100000)+"}\n")
	write(filepath.Join(dir, "vars.hcl"), "v = "+deep("{a=", "}", 100000)+"\n")
	write(filepath.Join(dir, "vars.json"), `{"v": `+deep("[", "]", 100000)+"}\n")
	f, diags := config.Load(flow, testRegistry(t))
	if diags.HasErrors() {
		t.Fatalf("load:\n%s", describe(diags))
	}
	assign := func(in config.VarInputs) func() hcl.Diagnostics {
		return func() hcl.Diagnostics { _, d := f.Assign(in); return d }
	}
	cases := map[string]func() hcl.Diagnostics{
		"vars.hcl":  assign(config.VarInputs{Files: []string{filepath.Join(dir, "vars.hcl")}}),
		"vars.json": assign(config.VarInputs{Files: []string{filepath.Join(dir, "vars.json")}}),
		"--var":     assign(config.VarInputs{Vars: []string{"v=" + deep("[", "]", 100000)}}),
		"FLOW_VAR_": assign(config.VarInputs{Environ: []string{"FLOW_VAR_v=" + deep("(", ")", 100000)}}),
		"template": func() hcl.Diagnostics {
			vars, _ := f.Assign(config.VarInputs{})
			_, d := f.NewScope(vars)
			return d
		},
	}
	if name := os.Getenv(nestingChild); name != "" {
		reportInChild(cases[name], filepath.Dir(dir))
	}
	for _, name := range slices.Sorted(maps.Keys(cases)) {
		got := inChild(t, "TestDeepInputsRefused", name)
		if !strings.HasPrefix(got, "1 error: Nesting too deep") && !(name == "template" && strings.Contains(got, "nest more than")) {
			t.Errorf("%s: %s", name, got)
		}
	}
	vars, _ := f.Assign(config.VarInputs{})
	if v := vars["v"]; !v.RawEquals(cty.ListVal([]cty.Value{cty.NumberIntVal(1)})) {
		t.Errorf("v = %#v", v)
	}
}

// nestingChild names, in a child process of the test binary, the case it runs.
const nestingChild = "FLOW_TEST_NESTING_CHILD"

// reportInChild runs one case in the child with a small stack limit, prints its
// diagnostics as one line, removes tempRoot (the exit skips the test's cleanup) and exits.
func reportInChild(f func() hcl.Diagnostics, tempRoot string) {
	debug.SetMaxStack(64 << 20) // a parser that recurses without the guard dies fast
	d := f()
	var said []string
	for _, e := range d {
		said = append(said, e.Summary+": "+e.Detail)
	}
	fmt.Printf("\n%s %d error: %s\n", childMark, len(d.Errs()), strings.ReplaceAll(strings.Join(said, "; "), "\n", " "))
	_ = os.RemoveAll(tempRoot)
	os.Exit(0)
}

const childMark = "CHILD-RESULT:"

// inChild runs test's case name in a child process and returns the line it printed,
// or says how the child died.
func inChild(t *testing.T, test, name string) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), nestingChild+"="+name)
	out, err := cmd.CombinedOutput()
	for _, line := range strings.Split(string(out), "\n") {
		if rest, ok := strings.CutPrefix(line, childMark+" "); ok && err == nil {
			return rest
		}
	}
	first, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	return fmt.Sprintf("the child process died (%v) before it could say: %.200s", err, first)
}
