// Command execplugin serves the built-in exec type through the plugin path, renamed
// pexec so that a flow can use both: the benchmarks in docs/plugins-performance.md
// compare the same work done by both.
package main

import (
	"errors"

	"github.com/flowdev/flow/plugin/server"
	"github.com/flowdev/flow/tasks"
	"github.com/flowdev/flow/tasks/exec"
)

func register(r *tasks.Registry) error {
	builtin := tasks.NewRegistry()
	if err := exec.Register(builtin); err != nil {
		return err
	}
	t, ok := builtin.Lookup("exec")
	if !ok {
		return errors.New("exec is not registered")
	}
	renamed := *t
	renamed.Name = "pexec"
	return r.Register(renamed)
}

func main() { server.Serve(register) }
