package cli

import (
	"github.com/spf13/cobra"

	"github.com/flowdev/flow/engine"
)

func (c *CLI) pluginsCmd() *cobra.Command {
	var flowPath string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "plugins [PATH]",
		Short: "List the plugins a flow declares: where each was found, its sha256 and types",
		Long: `List the plugins a flow's plugin blocks name (its modules' too), before anything
runs: the executable each was found as (a path with a slash is relative to the flow, a
bare name is looked up in $FLOW_PLUGIN_PATH and ~/.local/share/flow/plugins), its
sha256, and the task types it serves. Each plugin is started to read its types. A run
records the same (flow runs, flow status). The flow is PATH, as other commands take
it, or --flow PATH.`,
		Example: `  flow plugins flow.hcl
  flow plugins flows/site
  flow plugins flow.hcl --json | jq -r '.[].sha256'`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 1 {
				return failf(ExitInvalid, "%s takes PATH only; %s (see --help)", cmd.CommandPath(), extraArgs(args[1:]))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				if flowPath != "" && flowPath != args[0] {
					return failf(ExitInvalid, "flow plugins takes the flow once: PATH %q or --flow %q", args[0], flowPath)
				}
				flowPath = args[0]
			}
			if flowPath == "" {
				return failf(ExitInvalid, "flow plugins needs the flow: flow plugins PATH (see --help)")
			}
			flow, diags := engine.ReadFlow(flowPath, c.reg)
			if flow == nil || diags.HasErrors() {
				return c.reportDiags(flow, diags)
			}
			docs := []pluginDoc{}
			declaredPlugins(flow, func(d pluginDoc) { docs = append(docs, d) })
			if asJSON {
				return writeJSON(c.stdout, docs)
			}
			if len(docs) == 0 {
				c.stdout.Write([]byte("The flow declares no plugin.\n"))
				return nil
			}
			printPlugins(c.stdout, "Plugins:", docs)
			return nil
		},
	}
	cmd.Flags().StringVar(&flowPath, "flow", "", "the flow whose plugins to list (as PATH)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON array")
	return cmd
}

// declaredPlugins calls add for each plugin flow and its modules declare, the flow's first.
func declaredPlugins(flow *engine.Flow, add func(pluginDoc)) {
	for _, p := range flow.Plugins {
		add(pluginDoc{Name: p.Name, Path: p.Path, Sha256: p.Sha256, Types: p.Types})
	}
	for _, m := range flow.Modules {
		if m.Flow != nil {
			declaredPlugins(m.Flow, add)
		}
	}
}
