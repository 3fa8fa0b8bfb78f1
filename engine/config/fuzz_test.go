package config_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2"

	"github.com/flowdev/flow/engine"
	"github.com/flowdev/flow/engine/config"
)

// fuzzDeadline bounds one input: loading, assigning and planning any flow file is
// a matter of milliseconds, so an input that takes longer is reported as a hang.
const fuzzDeadline = 10 * time.Second

// FuzzLoad feeds any bytes to the loader as a flow file and runs the phases the CLI
// runs before executing anything (load, variables, locals, plan). Whatever the bytes,
// the result is diagnostics or a plan: never a panic, never a hang, and every error has a
// summary. The seed corpus is
// testdata/fuzz/FuzzLoad (the valid and invalid test flows and the shipped flows).
func FuzzLoad(f *testing.F) {
	reg := testRegistry(f)
	f.Fuzz(func(t *testing.T, src []byte) {
		path := filepath.Join(t.TempDir(), "fuzz.hcl")
		if err := os.WriteFile(path, src, 0o600); err != nil {
			t.Fatal(err)
		}
		done := make(chan hcl.Diagnostics, 1)
		go func() {
			flow, diags := config.Load(path, reg)
			if !diags.HasErrors() {
				vars, d := flow.Assign(config.VarInputs{Environ: []string{}})
				diags = append(diags, d...)
				if !diags.HasErrors() {
					scope, d := flow.NewScope(vars)
					diags = append(diags, d...)
					if !diags.HasErrors() {
						_, d = engine.NewPlan(flow, scope)
						diags = append(diags, d...)
					}
				}
			}
			done <- diags
		}()
		select {
		case diags := <-done:
			for _, d := range diags {
				if d.Severity == hcl.DiagError && d.Summary == "" {
					t.Errorf("error diagnostic without a summary: %+v", d)
				}
			}
		case <-time.After(fuzzDeadline):
			t.Fatalf("loading and planning did not finish within %s", fuzzDeadline)
		}
	})
}
