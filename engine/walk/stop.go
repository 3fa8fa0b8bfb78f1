package walk

import "github.com/flowdev/flow/internal/procgroup"

// KillTasks sends SIGKILL to the process group of every command the tasks of this
// process still run, for an exit that cannot wait for them (a second Ctrl-C): they
// would otherwise run on without a parent, and a resume would start a second copy. It
// returns the groups it could not signal, which are left running.
func KillTasks() (left []int) { return procgroup.KillTracked() }
