package sdk

import (
	"context"

	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	pluginpb "github.com/flowdev/flow/plugin/sdk/proto"
)

// ProtocolVersion is the version of the flow task plugin protocol (proto/flowplugin.proto)
// this module speaks. The module's minor version follows it: v0.2.x speaks protocol 2.
// Version 2 added Probe apart from Check.
const ProtocolVersion = 2

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
