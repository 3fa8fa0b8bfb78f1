package cli

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/flowdev/flow/tasks"
)

func (c *CLI) tasksCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "tasks [TYPE]",
		Short: "List the task types, or document one: attributes, types, outputs, example",
		Long: `List the task types, each with what flow destroy does with its instances (undoes
them, nothing to undo, not undone; "with undo": only instances that set that attribute),
or document one type: attributes, outputs, how it is undone, and an example.`,
		Example: `  flow tasks
  flow tasks exec`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
				fmt.Fprintln(tw, "TYPE\tFLOW DESTROY\tSUMMARY")
				for _, name := range c.reg.Names() {
					t, _ := c.reg.Lookup(name)
					fmt.Fprintf(tw, "%s\t%s\t%s\n", name, t.UndoColumn(), t.Summary)
				}
				return tw.Flush()
			}
			t, ok := c.reg.Lookup(args[0])
			if !ok {
				return failf(ExitInvalid, "no task type %q; known types: %s", args[0], strings.Join(c.reg.Names(), ", "))
			}
			return c.describeType(t)
		},
	}
}

func (c *CLI) describeType(t *tasks.Type) error {
	w := c.stdout
	fmt.Fprintf(w, "%s: %s\n", t.Name, t.Summary)
	if t.Doc != "" {
		fmt.Fprintf(w, "\n%s\n", strings.TrimSpace(t.Doc))
	}
	attrs, err := tasks.Attributes(t.New())
	if err != nil {
		return fail(ExitInvalid, err)
	}
	fmt.Fprintln(w, "\nAttributes:")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, a := range attrs {
		req := "optional"
		if a.Required {
			req = "required"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", a.Name, tasks.TypeString(a.Type), req, a.Doc)
	}
	tw.Flush()
	fmt.Fprintln(w, "\nShared settings: "+strings.Join(tasks.SharedSettings, ", "))
	if len(t.Outputs) > 0 {
		fmt.Fprintln(w, "\nOutputs:")
		for _, o := range t.Outputs {
			fmt.Fprintf(tw, "  %s\t%s\t%s\n", o.Name, tasks.TypeString(o.Type), o.Doc)
		}
		tw.Flush()
	}
	fmt.Fprintf(w, "\nUndo (flow destroy): %s\n", t.UndoText())
	if t.Example != "" {
		fmt.Fprintf(w, "\nExample:\n\n%s\n", indent(strings.TrimSpace(t.Example), "  "))
	}
	return nil
}

func indent(s, prefix string) string {
	return prefix + strings.ReplaceAll(s, "\n", "\n"+prefix)
}
