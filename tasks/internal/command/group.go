package command

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
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

// groupAlive reports whether a process of group pgid still runs. kill(-pgid, 0) counts
// zombies, and orphaned zombies stay until init reaps them (never, where flow itself is
// PID 1 in a container), so where /proc exists, a group of zombies counts as gone.
func groupAlive(pgid int) bool {
	if errors.Is(syscall.Kill(-pgid, 0), syscall.ESRCH) {
		return false
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return true // no /proc: trust kill
	}
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // exited meanwhile
		}
		if state, group, ok := parseStat(stat); ok && group == pgid && state != 'Z' && state != 'X' {
			return true
		}
	}
	return false
}

// parseStat returns the state and process group from /proc/PID/stat:
// "pid (comm) state ppid pgrp ...", where comm may contain spaces and parentheses.
func parseStat(stat []byte) (state byte, pgrp int, ok bool) {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, 0, false
	}
	f := bytes.Fields(stat[i+1:])
	if len(f) < 3 || len(f[0]) != 1 {
		return 0, 0, false
	}
	pgrp, err := strconv.Atoi(string(f[2]))
	return f[0][0], pgrp, err == nil
}
