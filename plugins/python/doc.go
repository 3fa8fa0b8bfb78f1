// Package python holds flow_plugin, the Python SDK for flow task plugins (Debian's
// python3-grpcio and python3-protobuf, installed by `bash scripts/apt-install.sh
// python3-grpcio python3-protobuf`), and flow-plugin-jsonfile, a plugin written on it.
// flow_plugin/flowplugin_pb2.py is generated from plugin/sdk/proto/flowplugin.proto (the
// SDK serves the methods itself, so no gRPC stubs are generated):
//
//	protoc -I../../plugin/sdk/proto --python_out=flow_plugin flowplugin.proto
//
// A plugin imports flow_plugin from the directory beside it, or after
// `pip install ./plugins/python` (pyproject.toml). The Go tests here run both through
// flow's host side and go-plugin's protocol, as flow does.
//
// plugins/ holds plugins, bundled and examples; the protocol, host and Go SDK they are
// served through are plugin/'s.
package python
