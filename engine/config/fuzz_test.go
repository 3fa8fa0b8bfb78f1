package config_test

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclwrite"

	"github.com/flowdev/flow/engine"
	"github.com/flowdev/flow/engine/config"
	"github.com/flowdev/flow/tasks"
)

// fuzzDeadline bounds one input: loading, assigning and planning any flow file is
// a matter of milliseconds, so an input that takes longer is reported as a hang.
const fuzzDeadline = 10 * time.Second

// FuzzLoad feeds any bytes to the loader as a flow file and runs the phases the CLI
// runs before executing anything (load, variables, locals, plan: engine.Load's, each
// after the one before whatever it found, through engine.Check). Whatever the bytes,
// the result is diagnostics or a plan: never a panic, never a hang, every error has a
// summary, and every diagnostic's range lies inside the file. A flow that plans also
// plans the same after `flow fmt` (hclwrite.Format): the same instances, in the same
// order, with the same dependencies, variables and outputs. The seed corpus is
// testdata/fuzz/FuzzLoad (the valid and invalid test flows and the shipped flows).
func FuzzLoad(f *testing.F) {
	reg := testRegistry(f)
	f.Fuzz(func(t *testing.T, src []byte) {
		path := filepath.Join(t.TempDir(), "fuzz.hcl")
		plan, diags := loadWithin(t, path, src, reg)
		for _, d := range diags {
			if d.Severity == hcl.DiagError && d.Summary == "" {
				t.Errorf("error diagnostic without a summary: %+v", d)
			}
			checkRange(t, d, "subject", d.Subject, path, src)
			checkRange(t, d, "context", d.Context, path, src)
		}
		if plan == nil {
			return
		}
		// flow fmt formats only what parses, and a flow that plans parsed.
		formatted := hclwrite.Format(src)
		plan2, diags2 := loadWithin(t, filepath.Join(t.TempDir(), "fuzz.hcl"), formatted, reg)
		if plan2 == nil {
			t.Fatalf("the flow plans, but not once formatted:\n%s\nformatted:\n%s", diags2.Error(), formatted)
		}
		if a, b := render(plan), render(plan2); a != b {
			t.Fatalf("formatting changed the plan:\n%s\nformatted, it plans as:\n%s\nformatted:\n%s", a, b, formatted)
		}
	})
}

// loadWithin writes src to path and runs the phases FuzzLoad names, failing the test
// if they take longer than fuzzDeadline. plan is nil when a phase has errors.
func loadWithin(t *testing.T, path string, src []byte, reg *tasks.Registry) (*engine.Plan, hcl.Diagnostics) {
	t.Helper()
	if err := os.WriteFile(path, src, 0o600); err != nil {
		t.Fatal(err)
	}
	type result struct {
		plan  *engine.Plan
		diags hcl.Diagnostics
	}
	done := make(chan result, 1)
	go func() {
		_, plan, diags := engine.Check(path, reg, config.VarInputs{Environ: []string{}})
		if diags.HasErrors() {
			plan = nil
		}
		done <- result{plan, diags}
	}()
	select {
	case r := <-done:
		return r.plan, r.diags
	case <-time.After(fuzzDeadline):
		t.Fatalf("loading and planning did not finish within %s", fuzzDeadline)
		return nil, nil
	}
}

// checkRange fails the test unless rng, a range of d in file path, lies inside src:
// lines from 1 to the number of lines, each column at most one past its line (a
// column counts characters, so at most its bytes), byte offsets within src and in
// order. Ranges in other files (a module's) are not checked.
func checkRange(t *testing.T, d *hcl.Diagnostic, what string, rng *hcl.Range, path string, src []byte) {
	t.Helper()
	if rng == nil || rng.Filename != path {
		return
	}
	lines := bytes.Split(src, []byte("\n"))
	in := func(p hcl.Pos) bool {
		return p.Line >= 1 && p.Line <= len(lines) && p.Column >= 1 &&
			p.Column <= len(lines[p.Line-1])+1 && p.Byte >= 0 && p.Byte <= len(src)
	}
	if !in(rng.Start) || !in(rng.End) || rng.Start.Byte > rng.End.Byte {
		t.Errorf("diagnostic %q: %s range %s (bytes %d-%d) is not inside the %d-byte, %d-line file",
			d.Summary, what, rng, rng.Start.Byte, rng.End.Byte, len(src), len(lines))
	}
}

// render is what a plan does, deterministically: its instances in order, each with
// its key and dependencies, and the flow's variables and outputs.
func render(p *engine.Plan) string {
	var b strings.Builder
	for _, addr := range p.Order {
		inst := p.Instances[addr]
		fmt.Fprintf(&b, "%s <- %s\n", addr, strings.Join(inst.Deps, ", "))
	}
	vars := slices.Sorted(maps.Keys(p.Flow.Variables))
	fmt.Fprintf(&b, "variables: %s\n", strings.Join(vars, ", "))
	outputs := make([]string, 0, len(p.Flow.Outputs))
	for _, o := range p.Flow.Outputs {
		outputs = append(outputs, o.Name)
	}
	fmt.Fprintf(&b, "outputs: %s\n", strings.Join(outputs, ", "))
	return b.String()
}
