package command

import (
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/flowdev/flow/internal/procgroup"
)

// groupPoll is how often a cancelled run checks whether its process group is gone.
const groupPoll = 25 * time.Millisecond

// stopGroup sends SIGTERM to process group pgid, waits until the group is gone or grace
// has passed, then sends SIGKILL.
func stopGroup(pgid int, grace time.Duration, log hclog.Logger) {
	log.Debug("cancelled; sending SIGTERM to process group", "pgid", pgid)
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	deadline := time.NewTimer(grace)
	defer deadline.Stop()
	poll := time.NewTicker(groupPoll)
	defer poll.Stop()
	for {
		select {
		case <-deadline.C:
			log.Debug("grace period over; sending SIGKILL to process group", "pgid", pgid)
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			return
		case <-poll.C:
			if !groupAlive(pgid) {
				return
			}
		}
	}
}

// groupAlive reports whether a process of group pgid still runs (procgroup.Alive).
func groupAlive(pgid int) bool { return procgroup.Alive(pgid) }
