// Package plugin and its subpackages are the machinery of task plugins: the protocol,
// the host that runs plugins and the SDK they are written with. The plugins themselves,
// bundled and examples (the http plugin, the Python SDK and a plugin written on it),
// live in plugins/, beside it.
//
// Package plugin owns flow's side of what the task plugin protocol shares with
// plugins: the versions flow starts, and how cty values and types and flow's task
// types (tasks.Type) cross the boundary. The protocol itself (its version, the
// go-plugin handshake, the gRPC definition) is the SDK module's, plugin/sdk, which
// plugins outside this repository depend on; the host side (starting plugins, their
// types in the registry) is plugin/host; serving flow's own task types from a plugin
// is plugin/server.
package plugin

import (
	goplugin "github.com/hashicorp/go-plugin"

	"github.com/flowdev/flow/plugin/sdk"
)

// ProtocolVersion is the protocol version flow prefers, the SDK's.
const ProtocolVersion = sdk.ProtocolVersion

// MinProtocolVersion is the oldest version flow still starts: a version 1 plugin has
// no Probe, and flow asks its Check both questions, as version 1 said. A plugin
// built for a version outside these is refused at start, with a message naming them.
const MinProtocolVersion = 1

// Handshake and Name are the SDK's.
var Handshake = sdk.Handshake

const Name = sdk.Name

// VersionedPlugins is the plugin set of flow's side for every version it speaks.
func VersionedPlugins() map[int]goplugin.PluginSet {
	out := map[int]goplugin.PluginSet{}
	for v := MinProtocolVersion; v <= ProtocolVersion; v++ {
		out[v] = sdk.Plugins(nil)
	}
	return out
}
