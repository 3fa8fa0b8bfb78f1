package cli

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/hashicorp/hcl/v2/hclwrite"
	"github.com/pmezard/go-difflib/difflib"
	"github.com/spf13/cobra"

	"github.com/flowdev/flow/engine"
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

// format formats path, a file or the .hcl files of a directory. A file that does not
// parse is reported and left as it is, and the others are still formatted (and
// listed): one broken file must not hide the rest.
func (c *CLI) format(path string, check bool) error {
	files := []string{path}
	if info, err := os.Stat(path); err != nil {
		return fail(ExitInvalid, err)
	} else if info.IsDir() {
		files, _ = filepath.Glob(filepath.Join(path, "*.hcl"))
	}
	changed := 0
	var broken []string
	for _, name := range files {
		did, err := c.formatFile(name, check)
		var ee *exitError
		if errors.As(err, &ee) && ee.reported {
			broken = append(broken, name)
			continue
		}
		if err != nil {
			return err
		}
		if did {
			changed++
		}
	}
	switch {
	case len(broken) == 1 && len(files) == 1:
		return reported(ExitInvalid, fmt.Errorf("%s does not parse", broken[0]))
	case len(broken) == 1:
		return failf(ExitInvalid, "%s does not parse, and was left as it is", broken[0])
	case len(broken) > 1:
		return failf(ExitInvalid, "%d files do not parse, and were left as they are: %s", len(broken), strings.Join(broken, ", "))
	case check && changed > 0:
		return reported(ExitTaskFailed, fmt.Errorf("%s not formatted", count(changed, "file is")))
	}
	return nil
}

// formatFile formats one file (with check, shows the diff instead), and says whether
// it changed; a file that does not parse is a reported error and is not touched.
func (c *CLI) formatFile(name string, check bool) (bool, error) {
	src, err := os.ReadFile(name)
	if err != nil {
		return false, fail(ExitInvalid, err)
	}
	// A file nested too deep is refused before the parser sees it (no source
	// snippet: its line may be as long as the file).
	if diags := engine.CheckNesting(src, name); diags.HasErrors() {
		c.printDiags(nil, diags)
		return false, reported(ExitInvalid, fmt.Errorf("%s does not parse", name))
	}
	// Never rewrite a file that does not parse: formatting would garble it.
	if _, diags := hclsyntax.ParseConfig(src, name, hcl.InitialPos); diags.HasErrors() {
		c.printDiags(&engine.Flow{Files: map[string]*hcl.File{name: {Bytes: src}}}, diags) // for the source snippet
		return false, reported(ExitInvalid, fmt.Errorf("%s does not parse", name))
	}
	out := hclwrite.Format(src)
	if bytes.Equal(src, out) {
		return false, nil
	}
	fmt.Fprintln(c.stdout, name)
	if check {
		c.printDiff(name, src, out)
		return true, nil
	}
	if err := os.WriteFile(name, out, 0o644); err != nil {
		return false, fail(ExitInvalid, err)
	}
	return true, nil
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
