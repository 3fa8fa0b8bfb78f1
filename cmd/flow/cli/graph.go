package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/flowdev/flow/engine"
)

func (c *CLI) graphCmd() *cobra.Command {
	var v varFlags
	var format string
	cmd := &cobra.Command{
		Use:   "graph PATH",
		Short: "Print the graph of task instances as text, Graphviz dot or Mermaid",
		Long: `Print the dependency graph of the flow's task instances. Edges point from a
dependency to the instance that waits for it, the order in which they run.`,
		Example: `  flow graph flows/demo.hcl
  flow graph flows/demo.hcl --format dot | dot -Tsvg > demo.svg
  flow graph flows/lab.hcl --format mermaid`,
		Args: exactArgs(1, "PATH"),
		RunE: func(cmd *cobra.Command, args []string) error {
			l, err := c.load(args[0], v, nil, true)
			if err != nil {
				return err
			}
			switch format {
			case "text":
				err = writeText(c.stdout, l.Plan)
			case "dot":
				err = writeDot(c.stdout, l.Plan)
			case "mermaid":
				err = writeMermaid(c.stdout, l.Plan)
			default:
				return failf(ExitInvalid, "unknown --format %q: use text, dot or mermaid", format)
			}
			return err
		},
	}
	v.add(cmd)
	cmd.Flags().StringVar(&format, "format", "text", "text, dot or mermaid")
	return cmd
}

// writeText lists each instance, with its description, and under it what it waits for.
func writeText(w io.Writer, p *engine.Plan) error {
	var b strings.Builder
	for _, addr := range p.Graph.Vertices() {
		b.WriteString(addr)
		if d := p.Instances[addr].Task.Description; d != "" {
			fmt.Fprintf(&b, "  # %s", firstLine(d))
		}
		b.WriteString("\n")
		for _, dep := range p.Graph.DependsOn(addr) {
			fmt.Fprintf(&b, "  %s\n", dep)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func writeDot(w io.Writer, p *engine.Plan) error {
	var b strings.Builder
	b.WriteString("digraph flow {\n  rankdir=LR;\n  node [shape=box];\n")
	for _, addr := range p.Order {
		if d := p.Instances[addr].Task.Description; d != "" {
			fmt.Fprintf(&b, "  %q [tooltip=%q];\n", addr, d)
			continue
		}
		fmt.Fprintf(&b, "  %q;\n", addr)
	}
	for _, addr := range p.Order {
		for _, dep := range p.Instances[addr].Deps {
			fmt.Fprintf(&b, "  %q -> %q;\n", dep, addr)
		}
	}
	b.WriteString("}\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func writeMermaid(w io.Writer, p *engine.Plan) error {
	var b strings.Builder
	ids := map[string]string{}
	b.WriteString("flowchart LR\n")
	for i, addr := range p.Order {
		ids[addr] = fmt.Sprintf("n%d", i)
		label := addr
		if d := p.Instances[addr].Task.Description; d != "" {
			label += "<br/><small>" + firstLine(d) + "</small>"
		}
		fmt.Fprintf(&b, "  %s[\"%s\"]\n", ids[addr], strings.ReplaceAll(label, `"`, "#quot;"))
	}
	for _, addr := range p.Order {
		for _, dep := range p.Instances[addr].Deps {
			fmt.Fprintf(&b, "  %s --> %s\n", ids[dep], ids[addr])
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}
