// Command flow-plugin-host runs the plugins a flow declares, for flow: flow starts it
// (from next to its own executable, or PATH) when a flow has a plugin block, and
// talks to it on fd 3 (package plugin/bridge). It is a program of its own so that
// flow itself links neither gRPC nor go-plugin: a flow without plugins does not pay
// for them. It is not meant to be run by hand.
//
// Its death signal is SIGTERM (plugin/bridge): when flow dies, even by SIGKILL, it
// kills the process group of every plugin, so nothing a plugin started outlives
// flow, and removes its socket directory from $TMPDIR.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/hashicorp/go-hclog"

	"github.com/flowdev/flow/plugin/bridge"
	"github.com/flowdev/flow/plugin/host"
)

func main() {
	conn := os.NewFile(3, "flow")
	if conn == nil {
		fmt.Fprintln(os.Stderr, "flow-plugin-host: flow starts this program itself, with its connection on fd 3")
		os.Exit(2)
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	go func() {
		<-sigs
		if left := host.KillPlugins(); len(left) > 0 {
			fmt.Fprintf(os.Stderr, "flow-plugin-host: could not stop the plugin process groups %v\n", left)
		}
		os.Exit(1)
	}()
	// flow's --log-level (bridge.HostLogLevel): at debug, go-plugin logs each plugin's
	// stderr lines, named after the plugin, to flow's stderr.
	var logger hclog.Logger
	if level := hclog.LevelFromString(os.Getenv(bridge.HostLogLevel)); level != hclog.NoLevel && level <= hclog.Debug {
		logger = hclog.New(&hclog.LoggerOptions{Name: "plugin", Level: level, Output: os.Stderr})
	}
	if err := host.ServeBridge(conn, host.NewLoader(logger)); err != nil {
		fmt.Fprintln(os.Stderr, "flow-plugin-host:", err)
		os.Exit(1)
	}
}
