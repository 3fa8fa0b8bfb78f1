// Package server serves flow's own task types (tasks.Type: an hcl-tagged config
// struct with Validate and Run, optionally tasks.Destroyer, plugin.Checker and
// tasks.Prober) from a plugin executable in this repository, exactly as a built-in
// type is written:
//
//	func main() { server.Serve(mytasks.Register) }
//
// A plugin outside this repository uses the SDK module, plugin/sdk, instead: it does
// not depend on flow's packages. This package serves through it.
//
// flow starts the executable (go-plugin, protocol plugin.ProtocolVersion), reads the
// schema of every type it serves, and calls Validate, Check, Run and Destroy over
// gRPC. What a task writes to env.Stdout and env.Stderr is streamed to flow line by
// line; what it writes to os.Stdout is lost and os.Stderr goes to flow's log, whose
// last lines flow shows when the plugin crashes.
package server

import (
	"fmt"
	"os"

	"github.com/flowdev/flow/plugin/sdk"
	"github.com/flowdev/flow/tasks"
)

// Stderr is the plugin process's own standard error (sdk.Stderr).
var Stderr = sdk.Stderr

// Serve registers the task types of every register function and serves them until
// flow ends the plugin. It does not return when serving; it exits with status 1 when
// a type cannot be served (a bad config struct, a duplicate name) or the executable
// was not started by flow.
func Serve(register ...func(*tasks.Registry) error) {
	srv, err := NewServer(register...)
	if err != nil {
		fmt.Fprintf(os.Stderr, "flow plugin: %v\n", err)
		os.Exit(1)
	}
	sdk.ServeServer(srv)
}
