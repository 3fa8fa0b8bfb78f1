// Package plugin owns what both sides of the task plugin protocol share: its version,
// the go-plugin handshake, the gRPC plugin definition, and how cty values and types
// cross the boundary. The host side (starting plugins, their types in the registry)
// is plugin/host; the plugin side (serving task types) is plugin/sdk.
package plugin

import (
	"context"

	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	pluginpb "github.com/flowdev/flow/plugin/proto"
)

// ProtocolVersion is the version of flowplugin.proto this package serves (plugin/sdk)
// and flow prefers. Version 2 added Probe apart from Check.
const ProtocolVersion = 2

// MinProtocolVersion is the oldest version flow still starts: a version 1 plugin has
// no Probe, and flow asks its Check both questions, as version 1 said. A plugin
// built for a version outside these is refused at start, with a message naming them.
const MinProtocolVersion = 1

// Name is the one plugin a flow plugin executable serves in go-plugin's terms.
const Name = "tasks"

// Handshake is the go-plugin handshake: the magic cookie tells a plugin executable it
// was started by flow, not by hand.
var Handshake = goplugin.HandshakeConfig{
	ProtocolVersion:  ProtocolVersion,
	MagicCookieKey:   "FLOW_PLUGIN",
	MagicCookieValue: "task-types",
}

// GRPC is the go-plugin definition of the protocol: on the plugin side it serves
// Impl, on flow's side it returns a pluginpb.TaskPluginClient.
type GRPC struct {
	goplugin.NetRPCUnsupportedPlugin
	Impl pluginpb.TaskPluginServer
}

// GRPCServer registers the task plugin service.
func (p *GRPC) GRPCServer(_ *goplugin.GRPCBroker, s *grpc.Server) error {
	pluginpb.RegisterTaskPluginServer(s, p.Impl)
	return nil
}

// GRPCClient returns the task plugin client on conn.
func (p *GRPC) GRPCClient(_ context.Context, _ *goplugin.GRPCBroker, conn *grpc.ClientConn) (any, error) {
	return pluginpb.NewTaskPluginClient(conn), nil
}

// Plugins is the plugin set of both sides.
func Plugins(server pluginpb.TaskPluginServer) goplugin.PluginSet {
	return goplugin.PluginSet{Name: &GRPC{Impl: server}}
}

// VersionedPlugins is the plugin set of flow's side for every version it speaks.
func VersionedPlugins() map[int]goplugin.PluginSet {
	out := map[int]goplugin.PluginSet{}
	for v := MinProtocolVersion; v <= ProtocolVersion; v++ {
		out[v] = Plugins(nil)
	}
	return out
}
