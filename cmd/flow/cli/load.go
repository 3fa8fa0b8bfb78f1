package cli

import (
	"bytes"
	"errors"
	"fmt"
	"os"

	"github.com/hashicorp/hcl/v2"
	"github.com/spf13/cobra"
	"github.com/zclconf/go-cty/cty"

	"github.com/flowdev/flow/engine"
)

// varFlags are the variable-setting flags shared by run, resume, plan and validate.
type varFlags struct {
	vars  []string
	files []string
}

func (v *varFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringArrayVar(&v.vars, "var", nil, "set a variable: NAME=VALUE (repeatable)")
	cmd.Flags().StringArrayVar(&v.files, "var-file", nil, "read variables from an HCL or JSON file (repeatable)")
}

// load reads path and plans it, printing every diagnostic. base holds the values
// recorded by a run being resumed. With partial set, variables without a value are
// unknown instead of an error (for validate and graph).
func (c *CLI) load(path string, v varFlags, base map[string]cty.Value, partial bool) (*engine.Loaded, error) {
	l, flow, diags := engine.Load(path, c.reg, engine.VarInputs{Base: base, Environ: os.Environ(), Files: v.files, Vars: v.vars, Partial: partial})
	if diags.HasErrors() {
		return nil, c.reportDiags(flow, diags)
	}
	if len(diags) > 0 {
		c.printDiags(flow, diags)
	}
	return l, nil
}

func (c *CLI) printDiags(flow *engine.Flow, diags hcl.Diagnostics) {
	var files map[string]*hcl.File
	if flow != nil {
		files = flow.Files
	}
	w := hcl.NewDiagnosticTextWriter(c.stderr, withSources(files, diags), 100, false)
	w.WriteDiagnostics(diags)
}

// withSources is files and, for a diagnostic in a file the flow does not hold (a
// --var-file; a flow file that did not load), that file as it is on disk, so its
// lines are shown. A name that is no regular file ("--var NAME") is left out.
func withSources(files map[string]*hcl.File, diags hcl.Diagnostics) map[string]*hcl.File {
	out := make(map[string]*hcl.File, len(files))
	for name, f := range files {
		out[name] = f
	}
	for _, d := range diags {
		if d.Subject == nil || out[d.Subject.Filename] != nil {
			continue
		}
		name := d.Subject.Filename
		if fi, err := os.Stat(name); err != nil || !fi.Mode().IsRegular() || fi.Size() > maxShownSource {
			continue
		}
		if src, err := os.ReadFile(name); err == nil && shortLine(src, d.Subject.Start.Byte) {
			out[name] = &hcl.File{Bytes: src}
		}
	}
	return out
}

// maxShownSource bounds the file withSources reads to show a line of it, and
// maxShownLine the line: a file that nests too deep may be one line long.
const (
	maxShownSource = 4 << 20
	maxShownLine   = 1000
)

// shortLine reports whether the line of src holding offset is at most maxShownLine.
func shortLine(src []byte, offset int) bool {
	offset = min(max(offset, 0), len(src))
	start := bytes.LastIndexByte(src[:offset], '\n') + 1
	end := bytes.IndexByte(src[offset:], '\n')
	if end < 0 {
		end = len(src) - offset
	}
	return offset+end-start <= maxShownLine
}

// reportDiags prints diags and returns the invalid-flow error.
func (c *CLI) reportDiags(flow *engine.Flow, diags hcl.Diagnostics) error {
	c.printDiags(flow, diags)
	n := len(diags.Errs())
	msg := "the flow is invalid"
	if n > 1 {
		msg = fmt.Sprintf("%s (%d errors)", msg, n)
	}
	return reported(ExitInvalid, errors.New(msg))
}
