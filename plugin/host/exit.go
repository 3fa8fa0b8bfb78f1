package host

import (
	"os"

	"github.com/flowdev/flow/internal/procgroup"
)

// KillPlugins SIGKILLs the process group of every plugin this process started, the
// plugins and what they started, and removes this process's socket directory: for
// an exit that cannot wait, as flow-plugin-host's on its death signal (flow died,
// maybe by SIGKILL). It returns the groups it could not signal.
func KillPlugins() (left []int) {
	left = procgroup.KillTracked()
	sockets.mu.Lock()
	defer sockets.mu.Unlock()
	if sockets.dir != "" {
		_ = os.RemoveAll(sockets.dir)
		sockets.dir = ""
	}
	return left
}
