package sdk

import (
	"fmt"
	"os"

	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"

	pluginpb "github.com/flowdev/flow/plugin/sdk/proto"
)

// Stderr is the plugin process's own standard error, as it was before Serve: what a
// task writes here reaches flow at once, and flow shows its last lines when the
// plugin crashes. (go-plugin redirects os.Stderr into a stream that a crash may cut
// short; Env.Log writes here.) What a plugin writes to os.Stdout is lost.
var Stderr = os.Stderr

// Serve serves types until flow ends the plugin; it does not return. It exits with
// status 1 when a type is malformed (see NewServer) or the executable was not
// started by flow.
func Serve(types ...Type) {
	srv, err := NewServer(types...)
	if err != nil {
		fmt.Fprintf(os.Stderr, "flow plugin: %v\n", err)
		os.Exit(1)
	}
	ServeServer(srv)
}

// ServeServer serves a task plugin service of its own (flow's in-tree plugins serve
// its tasks.Type values so) until flow ends the plugin. It exits with status 1 when
// the executable was not started by flow.
func ServeServer(srv pluginpb.TaskPluginServer) {
	if os.Getenv(Handshake.MagicCookieKey) != Handshake.MagicCookieValue {
		fmt.Fprintln(os.Stderr, "this is a flow plugin: name it in a flow's plugin block; flow starts it")
		os.Exit(1)
	}
	goplugin.Serve(&goplugin.ServeConfig{
		HandshakeConfig: Handshake,
		Plugins:         Plugins(srv),
		GRPCServer:      goplugin.DefaultGRPCServer,
		// go-plugin's own log (hclog, which it depends on), without its trace lines.
		Logger: hclog.New(&hclog.LoggerOptions{Output: Stderr, JSONFormat: true, Level: hclog.Info}),
	})
}
