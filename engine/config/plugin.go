package config

import (
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/gohcl"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/flowdev/flow/tasks"
)

var pluginSchema = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "source", Required: true}}}

// loadPlugins reads the flow's plugin blocks, plugin "NAME" { source = "..." }, and
// returns reg with the types of every plugin they name: a source with a slash is a
// path relative to the flow's directory, a bare name is looked up in the plugin
// directories (docs/plugins.md). A plugin that cannot be found or started, or serves
// a type that is already known, is an error on its block.
func (f *Flow) loadPlugins(blocks hcl.Blocks, reg *tasks.Registry) (*tasks.Registry, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	seen := map[string]hcl.Range{}
	for _, b := range blocks {
		name := b.Labels[0]
		if !hclsyntax.ValidIdentifier(name) {
			diags = append(diags, errorf(b.LabelRanges[0], "Invalid plugin name", "%q is not a valid identifier.", name))
			continue
		}
		if prev, dup := seen[name]; dup {
			diags = append(diags, errorf(b.LabelRanges[0], "Duplicate plugin",
				"Plugin %q is declared twice: first at %s, again here.", name, prev))
			continue
		}
		seen[name] = b.DefRange
		content, d := b.Body.Content(pluginSchema)
		if diags = append(diags, d...); d.HasErrors() {
			continue
		}
		var source string
		if d := gohcl.DecodeExpression(content.Attributes["source"].Expr, nil, &source); d.HasErrors() {
			diags = append(diags, d...)
			continue
		}
		next, use, err := reg.WithPlugin(tasks.PluginSpec{Name: name, Source: source, Dir: f.Dir, WorkDir: f.WorkDir})
		if err != nil {
			diags = append(diags, errorf(content.Attributes["source"].Expr.Range(), "Cannot use plugin", "%s.", err))
			continue
		}
		reg = next
		f.Plugins = append(f.Plugins, use)
	}
	return reg, diags
}

// unlessPluginFailed drops the "Unknown task type" errors of a task block when a
// plugin could not be used (pluginDiags has errors): its types are unknown because of
// that error, which already names the plugin and its stderr, and a second error
// listing every built-in type only buries it.
func unlessPluginFailed(pluginDiags, taskDiags hcl.Diagnostics) hcl.Diagnostics {
	if !pluginDiags.HasErrors() {
		return taskDiags
	}
	var out hcl.Diagnostics
	for _, d := range taskDiags {
		if d.Summary != unknownTypeSummary {
			out = append(out, d)
		}
	}
	return out
}
