package cli

import (
	"errors"
	"fmt"
	"os"

	"github.com/hashicorp/hcl/v2"
	"github.com/spf13/cobra"

	"github.com/flowdev/flow/engine"
)

// validateDoc is the `flow validate --json` contract, shaped as terraform's.
type validateDoc struct {
	Valid        bool            `json:"valid"`
	ErrorCount   int             `json:"error_count"`
	WarningCount int             `json:"warning_count"`
	Diagnostics  []diagnosticDoc `json:"diagnostics"`
}

type diagnosticDoc struct {
	Severity string    `json:"severity"` // error or warning
	Summary  string    `json:"summary"`
	Detail   string    `json:"detail"`
	Range    *rangeDoc `json:"range,omitempty"`
}

type rangeDoc struct {
	Filename string `json:"filename"`
	Start    posDoc `json:"start"`
	End      posDoc `json:"end"`
}

type posDoc struct {
	Line   int `json:"line"`
	Column int `json:"column"`
	Byte   int `json:"byte"`
}

// validateJSON prints one validateDoc; an invalid flow exits 2 as without --json.
func (c *CLI) validateJSON(path string, v varFlags) error {
	_, _, diags := engine.Load(path, c.reg, engine.VarInputs{Environ: os.Environ(), Files: v.files, Vars: v.vars, Partial: true})
	doc := validateDoc{Valid: !diags.HasErrors(), Diagnostics: []diagnosticDoc{}}
	for _, d := range diags {
		dd := diagnosticDoc{Severity: "warning", Summary: d.Summary, Detail: d.Detail}
		if d.Severity == hcl.DiagError {
			dd.Severity = "error"
			doc.ErrorCount++
		} else {
			doc.WarningCount++
		}
		if r := d.Subject; r != nil {
			dd.Range = &rangeDoc{Filename: r.Filename,
				Start: posDoc{r.Start.Line, r.Start.Column, r.Start.Byte},
				End:   posDoc{r.End.Line, r.End.Column, r.End.Byte}}
		}
		doc.Diagnostics = append(doc.Diagnostics, dd)
	}
	if err := writeJSON(c.stdout, doc); err != nil {
		return err
	}
	if !doc.Valid {
		return reported(ExitInvalid, errors.New("the flow is invalid"))
	}
	return nil
}

func (c *CLI) validateCmd() *cobra.Command {
	var v varFlags
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "validate PATH",
		Short: "Check a flow without running anything",
		Long: `Check the flow at PATH: syntax, task types, attributes and their types, references,
for_each keys, and dependency cycles. Every error is reported with its file, line and
column. Variables without a value are treated as unknown, so a flow can be checked
before its secrets are at hand.`,
		Example: `  flow validate flows/demo.hcl
  flow validate flows/ --var members='["a"]'
  flow validate --json flows/demo.hcl | jq '.diagnostics[]'`,
		Args: exactArgs(1, "PATH"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if asJSON {
				return c.validateJSON(args[0], v)
			}
			l, err := c.load(args[0], v, nil, true)
			if err != nil {
				return err
			}
			fmt.Fprintf(c.stdout, "%s is valid: %s, %s.\n", args[0], count(len(l.Flow.Tasks), "task"), count(len(l.Plan.Order), "instance"))
			return nil
		},
	}
	v.add(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result and every diagnostic as one JSON object")
	return cmd
}
