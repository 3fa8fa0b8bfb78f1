package config_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/flowdev/flow/engine"
	"github.com/flowdev/flow/engine/config"
	"github.com/flowdev/flow/tasks"
	"github.com/flowdev/flow/tasks/exec"
)

// needsTask is a test task type with a required attribute: exec has none.
type needsTask struct {
	Target string         `hcl:"target" doc:"What it needs."`
	Count  int            `hcl:"count,optional" doc:"How many."`
	Within tasks.Duration `hcl:"within,optional" doc:"How long it may take."`
}

func (n *needsTask) Validate() error { return nil }

func (n *needsTask) Run(context.Context, *tasks.Env) (tasks.Outputs, error) {
	return tasks.Outputs{"result": cty.StringVal(n.Target)}, nil
}

// testRegistry has exec and the test type "needs".
func testRegistry(t testing.TB) *tasks.Registry {
	t.Helper()
	reg := tasks.NewRegistry()
	if err := exec.Register(reg); err != nil {
		t.Fatal(err)
	}
	reg.MustRegister(tasks.Type{
		Name: "needs", Summary: "Test type with a required attribute",
		New:     func() tasks.Task { return &needsTask{} },
		Outputs: []tasks.Output{{Name: "result", Type: cty.String}},
	})
	return reg
}

// pipeline runs the phases the CLI runs (engine.Load's, through engine.Check): every
// phase, whatever the one before found (only syntax errors stop it). It returns the
// diagnostics of all of them, and the plan, errors or not, when the files parsed.
func pipeline(t *testing.T, path string, in config.VarInputs) (*config.Flow, *engine.Plan, hcl.Diagnostics) {
	t.Helper()
	return engine.Check(path, testRegistry(t), in)
}

// mustPlan runs the pipeline and fails on any diagnostic, warnings included.
func mustPlan(t *testing.T, path string, in config.VarInputs) (*config.Flow, *engine.Plan) {
	t.Helper()
	flow, plan, diags := pipeline(t, path, in)
	if len(diags) > 0 {
		t.Fatalf("%s: unexpected diagnostics:\n%s", path, describe(diags))
	}
	return flow, plan
}

func describe(diags hcl.Diagnostics) string {
	var b strings.Builder
	for _, d := range diags {
		where := "<no subject>"
		if d.Subject != nil {
			where = d.Subject.String()
		}
		fmt.Fprintf(&b, "  %s: %s: %s\n", where, d.Summary, d.Detail)
	}
	return b.String()
}

// marker is one expected diagnostic: a substring of its summary or detail, on a line
// of a file ("" file and line 0 for a diagnostic that has no source, such as --var).
type marker struct {
	file   string // base name
	line   int
	substr string
}

func (m marker) String() string {
	if m.file == "" {
		return fmt.Sprintf("(no source) %q", m.substr)
	}
	return fmt.Sprintf("%s:%d %q", m.file, m.line, m.substr)
}

var errorMarker = regexp.MustCompile(`#\s*ERROR:\s*`)

// directives are header comments of an invalid flow that set its inputs:
//
//	# VAR: NAME=VALUE        a --var
//	# VAR-FILE: PATH         a --var-file, relative to testdata/; its markers count too
//	# MODULE-FILE: PATH      a module's file, relative to testdata/; its markers count too
//	# ENV: FLOW_VAR_X=VALUE  an entry of Environ
//	# FLAG-ERROR: TEXT       an expected diagnostic without a source range
type directives struct {
	in      config.VarInputs
	markers []marker
	files   []string // files whose # ERROR markers count
}

func readMarkers(t *testing.T, path string) []marker {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []marker
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		parts := errorMarker.Split(sc.Text(), -1)
		for _, p := range parts[1:] {
			out = append(out, marker{file: filepath.Base(path), line: n, substr: strings.TrimSpace(p)})
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func readDirectives(t *testing.T, path string) directives {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	d := directives{files: []string{path}, in: config.VarInputs{Environ: []string{}}}
	for _, line := range strings.Split(string(src), "\n") {
		key, val, ok := strings.Cut(strings.TrimPrefix(line, "# "), ": ")
		if !ok || !strings.HasPrefix(line, "# ") {
			continue
		}
		switch key {
		case "VAR":
			d.in.Vars = append(d.in.Vars, val)
		case "VAR-FILE":
			p := filepath.Join("testdata", val)
			d.in.Files = append(d.in.Files, p)
			d.files = append(d.files, p)
		case "MODULE-FILE":
			d.files = append(d.files, filepath.Join("testdata", val))
		case "ENV":
			d.in.Environ = append(d.in.Environ, val)
		case "FLAG-ERROR":
			d.markers = append(d.markers, marker{substr: val})
		}
	}
	for _, f := range d.files {
		d.markers = append(d.markers, readMarkers(t, f)...)
	}
	return d
}

func matches(d *hcl.Diagnostic, m marker) bool {
	if !strings.Contains(d.Summary, m.substr) && !strings.Contains(d.Detail, m.substr) {
		return false
	}
	if d.Subject == nil {
		return m.file == ""
	}
	return m.file == filepath.Base(d.Subject.Filename) && m.line == d.Subject.Start.Line
}

// TestInvalidFlows loads every testdata/invalid/*.hcl and compares the diagnostics with
// the file's # ERROR markers: every marker is matched by an error on its line, and
// every error matches a marker on its line.
func TestInvalidFlows(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "invalid", "*.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 20 {
		t.Fatalf("found only %d invalid flows", len(files))
	}
	for _, path := range files {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".hcl"), func(t *testing.T) {
			dir := readDirectives(t, path)
			if len(dir.markers) == 0 {
				t.Fatalf("%s has no # ERROR markers", path)
			}
			_, _, diags := pipeline(t, path, dir.in)
			if !diags.HasErrors() {
				t.Fatalf("no errors; want %v", dir.markers)
			}
			for _, d := range diags {
				if d.Severity != hcl.DiagError {
					t.Errorf("unexpected warning: %s", describe(hcl.Diagnostics{d}))
				}
				if d.Subject == nil || d.Subject.Filename == "" {
					expected := false
					for _, m := range dir.markers {
						expected = expected || (m.file == "" && matches(d, m))
					}
					if !expected {
						t.Errorf("diagnostic without a source file: %q: %q", d.Summary, d.Detail)
					}
				}
				found := false
				for _, m := range dir.markers {
					found = found || matches(d, m)
				}
				if !found {
					t.Errorf("unmarked diagnostic: %s", describe(hcl.Diagnostics{d}))
				}
			}
			for _, m := range dir.markers {
				found := false
				for _, d := range diags {
					found = found || matches(d, m)
				}
				if !found {
					t.Errorf("marked error not reported: %v", m)
				}
			}
			if t.Failed() {
				t.Logf("all diagnostics:\n%s", describe(diags))
			}
		})
	}
}

// TestValidFlows plans every testdata/valid/*.hcl without a single diagnostic. The
// shipped flows/*.hcl use every task type, so cmd/flow validates them with the real
// registry.
func TestValidFlows(t *testing.T) {
	t.Setenv("FLOW_TEST_GREETING", "hello from env")
	files, err := filepath.Glob(filepath.Join("testdata", "valid", "*.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 5 {
		t.Fatalf("found only %d valid flows", len(files))
	}
	for _, path := range files {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".hcl"), func(t *testing.T) {
			_, plan := mustPlan(t, path, config.VarInputs{})
			if len(plan.Order) == 0 {
				t.Fatal("no instances")
			}
			if len(plan.Order) != len(plan.Instances) {
				t.Errorf("Order has %d instances, Instances %d", len(plan.Order), len(plan.Instances))
			}
			pos := map[string]int{}
			for i, a := range plan.Order {
				pos[a] = i
			}
			for _, a := range plan.Order {
				for _, dep := range plan.Instances[a].Deps {
					if pos[dep] >= pos[a] {
						t.Errorf("%s comes before its dependency %s", a, dep)
					}
				}
			}
		})
	}
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
