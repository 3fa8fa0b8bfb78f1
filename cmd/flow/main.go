// Command flow runs typed task graphs declared in HCL, with checkpoints and resume.
package main

import (
	"fmt"
	"io"
	"os"

	"k8s.io/klog/v2"

	"github.com/flowdev/flow/cmd/flow/cli"
	"github.com/flowdev/flow/plugin/bridge"
	"github.com/flowdev/flow/tasks"
	"github.com/flowdev/flow/tasks/exec"
	"github.com/flowdev/flow/tasks/image"
	"github.com/flowdev/flow/tasks/karmada"
	"github.com/flowdev/flow/tasks/kube"
	"github.com/flowdev/flow/tasks/lxd"
	"github.com/flowdev/flow/tasks/preflight"
	"github.com/flowdev/flow/tasks/process"
	"github.com/flowdev/flow/tasks/wait"
)

func main() {
	err := run()
	if err != nil && !cli.Reported(err) {
		fmt.Fprintln(os.Stderr, "flow:", err)
	}
	os.Exit(cli.ExitCode(err))
}

func run() error {
	// client-go logs through klog straight to flow's stderr, past the engine's
	// prefixes and redaction; tasks report what matters on their own streams.
	klog.LogToStderr(false)
	klog.SetOutput(io.Discard)
	reg, err := registry()
	if err != nil {
		return err
	}
	// Plugins a flow names are started on first use, by the plugin host (a program of
	// its own, so that flow does not link gRPC), and ended here (a SIGKILLed flow takes
	// the host along by Pdeathsig, and the host its plugins).
	plugins := bridge.NewLoader()
	defer plugins.Close()
	reg.SetPluginLoader(plugins)
	return cli.New(reg, os.Stdout, os.Stderr).Execute(os.Args[1:])
}

// registry lists every task type flow ships, explicitly, so tests can build their own.
func registry() (*tasks.Registry, error) {
	reg := tasks.NewRegistry()
	for _, register := range []func(*tasks.Registry) error{
		exec.Register,
		image.Register,
		karmada.Register,
		kube.Register,
		lxd.Register,
		preflight.Register,
		process.Register,
		wait.Register,
	} {
		if err := register(reg); err != nil {
			return nil, err
		}
	}
	return reg, nil
}
