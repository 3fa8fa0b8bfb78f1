// Package python holds flow-plugin-jsonfile, a flow plugin written in Python with
// Debian's python3-grpcio (installed by `bash scripts/apt-install.sh python3-grpcio
// python3-protobuf`), and its stubs generated from plugin/proto/flowplugin.proto:
//
//	python3 -m grpc_tools.protoc -I../../plugin/proto --python_out=. --grpc_python_out=. flowplugin.proto
//
// The Go test here runs it through flow's host side, as flow does.
package python
