package cli

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/hashicorp/hcl/v2/hclwrite"
	"github.com/pmezard/go-difflib/difflib"
	"github.com/spf13/cobra"

	"github.com/flowdev/flow/engine/config"
)

func (c *CLI) fmtCmd() *cobra.Command {
	var check bool
	cmd := &cobra.Command{
		Use:   "fmt [PATH]",
		Short: "Rewrite flow files in the canonical format",
		Long: `Rewrite .hcl files in the canonical HCL format, in place: PATH is a file or a directory
(default: the current directory, not recursive). With --check nothing is written; the
command lists the files that would change, each with a unified diff of the change,
and exits 1 if there are any.`,
		Example: `  flow fmt
  flow fmt flows/
  flow fmt --check flows/    # in CI`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			path := "."
			if len(args) == 1 {
				path = args[0]
			}
			return c.format(path, check)
		},
	}
	cmd.Flags().BoolVar(&check, "check", false, "only list files that are not formatted, with the diff; exit 1 if any")
	return cmd
}

func (c *CLI) format(path string, check bool) error {
	files := []string{path}
	if info, err := os.Stat(path); err != nil {
		return fail(ExitInvalid, err)
	} else if info.IsDir() {
		files, _ = filepath.Glob(filepath.Join(path, "*.hcl"))
	}
	changed := 0
	for _, name := range files {
		src, err := os.ReadFile(name)
		if err != nil {
			return fail(ExitInvalid, err)
		}
		// A file nested too deep is refused before the parser sees it (no source
		// snippet: its line may be as long as the file).
		if diags := config.CheckNesting(src, name, config.ConfigSyntax); diags.HasErrors() {
			c.printDiags(nil, diags)
			return reported(ExitInvalid, fmt.Errorf("%s does not parse", name))
		}
		// Never rewrite a file that does not parse: formatting would garble it.
		if _, diags := hclsyntax.ParseConfig(src, name, hcl.InitialPos); diags.HasErrors() {
			c.printDiags(&config.Flow{Files: map[string]*hcl.File{name: {Bytes: src}}}, diags) // for the source snippet
			return reported(ExitInvalid, fmt.Errorf("%s does not parse", name))
		}
		out := hclwrite.Format(src)
		if bytes.Equal(src, out) {
			continue
		}
		changed++
		fmt.Fprintln(c.stdout, name)
		if check {
			c.printDiff(name, src, out)
		} else {
			if err := os.WriteFile(name, out, 0o644); err != nil {
				return fail(ExitInvalid, err)
			}
		}
	}
	if check && changed > 0 {
		return reported(ExitTaskFailed, fmt.Errorf("%s not formatted", count(changed, "file is")))
	}
	return nil
}

// printDiff shows what formatting would change in name as a unified diff.
func (c *CLI) printDiff(name string, before, after []byte) {
	text, err := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A: difflib.SplitLines(string(before)), B: difflib.SplitLines(string(after)),
		FromFile: name, ToFile: name + " (formatted)", Context: 2,
	})
	if err == nil {
		io.WriteString(c.stdout, text)
	}
}
