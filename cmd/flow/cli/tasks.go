package cli

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/flowdev/flow/engine"
	"github.com/flowdev/flow/tasks"
	"github.com/flowdev/flow/tasks/taskdoc"
)

func (c *CLI) tasksCmd() *cobra.Command {
	var flowPath string
	cmd := &cobra.Command{
		Use:   "tasks [TYPE]",
		Short: "List the task types, or document one: attributes, types, outputs, example",
		Long: `List the task types, each with what flow destroy does with its instances (undoes
them, nothing to undo, not undone; "with undo": only instances that set that attribute),
or document one type: attributes, outputs, how it is undone, and an example.
With --flow, the types of the plugins that flow names are listed and documented too.`,
		Example: `  flow tasks
  flow tasks exec
  flow tasks --flow flows/site http`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			reg, from, err := c.pluginTypes(flowPath)
			if err != nil {
				return err
			}
			if len(args) == 0 {
				tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
				fmt.Fprintln(tw, "TYPE\tFLOW DESTROY\tSUMMARY")
				for _, name := range reg.Names() {
					t, _ := reg.Lookup(name)
					summary := t.Summary
					if p, ok := from[name]; ok {
						summary += " (plugin " + p + ")"
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\n", name, t.UndoColumn(), summary)
				}
				return tw.Flush()
			}
			t, ok := reg.Lookup(args[0])
			if !ok {
				return failf(ExitInvalid, "no task type %q.%s Known types: %s", args[0], engine.Suggest(args[0], reg.Names()), strings.Join(reg.Names(), ", "))
			}
			return c.describeType(t)
		},
	}
	cmd.Flags().StringVar(&flowPath, "flow", "", "also list the types of the plugins this flow names")
	return cmd
}

func (c *CLI) describeType(t *tasks.Type) error {
	text, err := taskdoc.Text(t)
	if err != nil {
		return fail(ExitInvalid, err)
	}
	_, err = io.WriteString(c.stdout, text)
	return err
}
