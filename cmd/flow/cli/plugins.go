package cli

import (
	"errors"

	"github.com/flowdev/flow/engine"
	"github.com/flowdev/flow/tasks"
)

// pluginTypes is the registry with the types of the plugins the flow at path names
// (the registry alone without a path), and which plugin serves each of those types.
func (c *CLI) pluginTypes(path string) (*tasks.Registry, map[string]string, error) {
	if path == "" {
		return c.reg, nil, nil
	}
	flow, diags := engine.ReadFlow(path, c.reg)
	if flow == nil {
		return nil, nil, c.reportDiags(flow, diags)
	}
	for _, d := range diags {
		if d.Summary == "Cannot use plugin" {
			return nil, nil, c.reportDiags(flow, diags)
		}
	}
	reg, from := c.reg, map[string]string{}
	for _, use := range flow.Plugins {
		next, _, err := reg.WithPlugin(tasks.PluginSpec{Name: use.Name, Source: use.Path})
		if err != nil {
			return nil, nil, fail(ExitInvalid, errors.Unwrap(err))
		}
		reg = next
		for _, t := range use.Types {
			from[t] = use.Name
		}
	}
	return reg, from, nil
}
