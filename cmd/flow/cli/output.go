package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2/hclwrite"
	"github.com/spf13/cobra"
	"github.com/zclconf/go-cty/cty"

	"github.com/flowdev/flow/engine"
)

func (c *CLI) outputCmd() *cobra.Command {
	var asJSON, showSensitive, raw bool
	var runID uint64
	cmd := &cobra.Command{
		Use:   "output [NAME]",
		Short: "Print the flow outputs the latest run recorded",
		Long: `Print the outputs of the latest run (or --run N), read from the state file: every output
as NAME = VALUE, or one output's value alone (a string without quotes), for scripts and
follow-on flows. Sensitive outputs are never stored, so they are listed as (sensitive)
(the run that computed them printed (sensitive) too), and "flow output NAME" of one
fails, saying so, rather than print a stand-in a script would take for the value.
--json prints one object of {"value", "type", "sensitive"} per output (or that object
alone for NAME), as in "flow status --json". --raw, as terraform output -raw, prints
one string, number or bool as it is, without a newline.

--show-sensitive is terraform output's flag; here it fails on a sensitive output and says
so, since the state file holds no secret to show: read a secret where its task put it
(a file the flow names, or the command that prints it).`,
		Example: `  flow output
  flow output kubeconfig            # the value alone
  flow output --raw members         # as terraform output -raw
  flow output --json | jq -r .registry.value`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			doc, err := c.loadStatus(runID)
			if err != nil {
				return err
			}
			if len(args) == 1 {
				o, ok := doc.Outputs[args[0]]
				if !ok && doc.Status == string(engine.Running) {
					return failf(ExitInvalid, "run %d is in progress and has no output %q yet (a run records its outputs when it ends); it has %s",
						doc.RunID, args[0], outputNames(doc.Outputs))
				}
				if !ok {
					return failf(ExitInvalid, "run %d has no output %q; it has %s", doc.RunID, args[0], outputNames(doc.Outputs))
				}
				if o.Sensitive && !asJSON {
					// A script reading the value alone must not get "(sensitive)" for it.
					return notStored(args[0])
				}
				if raw {
					return c.printRaw(args[0], o)
				}
				return c.printOutput(o, asJSON)
			}
			if raw {
				return failf(ExitInvalid, "--raw prints one output: name it, as in %q", c.commandHint("flow output --raw", "NAME"))
			}
			if showSensitive {
				for _, name := range slices.Sorted(maps.Keys(doc.Outputs)) {
					if doc.Outputs[name].Sensitive {
						return notStored(name)
					}
				}
			}
			if asJSON {
				return writeJSON(c.stdout, doc.Outputs)
			}
			for _, name := range slices.Sorted(maps.Keys(doc.Outputs)) {
				text, err := outputText(doc.Outputs[name], false)
				if err != nil {
					return fail(ExitInvalid, fmt.Errorf("output %q: %w", name, err))
				}
				fmt.Fprintf(c.stdout, "%s = %s\n", name, strings.ReplaceAll(text, "\n", "\n  "))
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.Flags().Uint64Var(&runID, "run", 0, "read this run instead of the latest")
	cmd.Flags().BoolVar(&raw, "raw", false, "print one output's string, number or bool as it is, as terraform output -raw (a string is printed so without it too)")
	cmd.MarkFlagsMutuallyExclusive("raw", "json")
	cmd.Flags().BoolVar(&showSensitive, "show-sensitive", false, "fail, naming it, on a sensitive output instead of printing (sensitive): its value is not in the state")
	return cmd
}

// notStored is --show-sensitive's answer: a secret is never written to the state.
func notStored(name string) error {
	return failf(ExitInvalid, "output %q is sensitive, and flow never writes a secret to the state file, so there is no value to show; read it where its task put it", name)
}

func (c *CLI) printOutput(o outputDoc, asJSON bool) error {
	if asJSON {
		return writeJSON(c.stdout, o)
	}
	text, err := outputText(o, true)
	if err != nil {
		return fail(ExitInvalid, err)
	}
	fmt.Fprintln(c.stdout, text)
	return nil
}

// printRaw prints o as terraform output -raw does: a string, number or bool as it
// is, without a newline; anything else is an error naming its type.
func (c *CLI) printRaw(name string, o outputDoc) error {
	v, err := engine.StoredValue{Type: o.Type, Value: o.Value}.Decode()
	if err != nil {
		return fail(ExitInvalid, err)
	}
	if !v.Type().IsPrimitiveType() || v.IsNull() || !v.IsKnown() {
		return failf(ExitInvalid, "output %q is %s, and --raw prints only a string, number or bool; use --json", name, v.Type().FriendlyName())
	}
	text, err := outputText(o, true)
	if err != nil {
		return fail(ExitInvalid, err)
	}
	_, err = io.WriteString(c.stdout, text)
	return err
}

// outputText renders an output in HCL syntax; with raw set a string is printed as is.
func outputText(o outputDoc, raw bool) (string, error) {
	if o.Sensitive {
		return "(sensitive)", nil
	}
	v, err := engine.StoredValue{Type: o.Type, Value: o.Value}.Decode()
	if err != nil {
		return "", err
	}
	if raw && v.Type() == cty.String && v.IsKnown() && !v.IsNull() {
		return v.AsString(), nil
	}
	return strings.TrimSpace(string(hclwrite.TokensForValue(v).Bytes())), nil
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func outputNames(m map[string]outputDoc) string {
	if len(m) == 0 {
		return "none"
	}
	return strings.Join(slices.Sorted(maps.Keys(m)), ", ")
}
