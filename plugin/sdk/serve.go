// Package sdk serves task types from a plugin executable. A plugin author writes a
// type exactly as a built-in one is written (an hcl-tagged config struct with
// Validate and Run, optionally tasks.Destroyer and tasks.Checker, registered by a
// Register function over tasks.Type) and calls Serve from main:
//
//	func main() { sdk.Serve(mytasks.Register) }
//
// flow starts the executable (go-plugin, protocol plugin.ProtocolVersion), reads the
// schema of every type it serves, and calls Validate, Check, Run and Destroy over
// gRPC. What a task writes to env.Stdout and env.Stderr is streamed to flow line by
// line; what it writes to os.Stdout is lost and os.Stderr goes to flow's log, whose
// last lines flow shows when the plugin crashes.
package sdk

import (
	"fmt"
	"os"

	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"

	"github.com/flowdev/flow/plugin"
	"github.com/flowdev/flow/tasks"
)

// Stderr is the plugin process's own standard error, as it was before Serve: what a
// task writes here reaches flow at once, and flow shows its last lines when the
// plugin crashes. (Serve redirects os.Stderr into a gRPC stream that a crash may cut
// short; env.Logger writes here too.)
var Stderr = os.Stderr

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
	if os.Getenv(plugin.Handshake.MagicCookieKey) != plugin.Handshake.MagicCookieValue {
		fmt.Fprintln(os.Stderr, "this is a flow plugin: name it in a flow's plugin block; flow starts it")
		os.Exit(1)
	}
	goplugin.Serve(&goplugin.ServeConfig{
		HandshakeConfig: plugin.Handshake,
		Plugins:         plugin.Plugins(srv),
		GRPCServer:      goplugin.DefaultGRPCServer,
		Logger:          hclog.New(&hclog.LoggerOptions{Output: Stderr, JSONFormat: true, Level: hclog.Info}),
	})
}
