package engine

import (
	"github.com/hashicorp/hcl/v2"

	"github.com/flowdev/flow/engine/config"
	"github.com/flowdev/flow/tasks"
)

// What commands that read flow files without running them (fmt, validate, plugins,
// tasks) need of engine/config, named by the engine: callers go through the engine's
// API, and engine/config stays its part.
type (
	// Flow is a loaded flow: its files, tasks, modules and plugins.
	Flow = config.Flow
	// VarInputs are where a flow's variables come from: recorded values, the
	// environment, --var-file and --var.
	VarInputs = config.VarInputs
)

// ReadFlow loads the flow at path (a file or a directory) without planning it,
// starting the plugins it names to learn their types; flow is nil when nothing loaded.
func ReadFlow(path string, reg *tasks.Registry) (*Flow, hcl.Diagnostics) {
	return config.Load(path, reg)
}

// CheckNesting refuses a flow file that nests deeper than the parser may recurse,
// before it is parsed.
func CheckNesting(src []byte, filename string) hcl.Diagnostics {
	return config.CheckNesting(src, filename, config.ConfigSyntax)
}

// Suggest returns ` Did you mean "x"?` for the candidate closest to given (at most
// two edits away), or "".
func Suggest(given string, candidates []string) string { return config.Suggest(given, candidates) }
