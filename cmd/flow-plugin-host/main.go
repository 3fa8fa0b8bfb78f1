// Command flow-plugin-host runs the plugins a flow declares, for flow: flow starts it
// (from next to its own executable, or PATH) when a flow has a plugin block, and
// talks to it on fd 3 (package plugin/bridge). It is a program of its own so that
// flow itself links neither gRPC nor go-plugin: a flow without plugins does not pay
// for them. It is not meant to be run by hand.
package main

import (
	"fmt"
	"os"

	"github.com/flowdev/flow/plugin/host"
)

func main() {
	conn := os.NewFile(3, "flow")
	if conn == nil {
		fmt.Fprintln(os.Stderr, "flow-plugin-host: flow starts this program itself, with its connection on fd 3")
		os.Exit(2)
	}
	if err := host.ServeBridge(conn, host.NewLoader(nil)); err != nil {
		fmt.Fprintln(os.Stderr, "flow-plugin-host:", err)
		os.Exit(1)
	}
}
