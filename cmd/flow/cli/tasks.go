package cli

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/flowdev/flow/tasks"
	"github.com/flowdev/flow/tasks/taskdoc"
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
	text, err := taskdoc.Text(t)
	if err != nil {
		return fail(ExitInvalid, err)
	}
	_, err = io.WriteString(c.stdout, text)
	return err
}
