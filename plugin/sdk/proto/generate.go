// Package pluginpb is the generated Go code of flowplugin.proto, the task plugin
// protocol. It is committed, so building and testing flow needs no protoc; after
// changing the .proto, run go generate (protoc, protoc-gen-go and protoc-gen-go-grpc).
package pluginpb

//go:generate protoc --go_out=. --go_opt=paths=source_relative --go-grpc_out=. --go-grpc_opt=paths=source_relative flowplugin.proto
//go:generate protoc --python_out=../../../plugins/python/flow_plugin flowplugin.proto
