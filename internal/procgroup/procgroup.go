// Package procgroup owns what flow knows of the process groups its tasks start: which
// still run (so an exit that cannot wait stops them instead of orphaning them), how
// /proc names one process across pid reuse, and how a group is stopped.
//
// It does not start processes (tasks/internal/command does, and plugin/host a plugin's)
// or decide when to stop them (the engine, the CLI and the plugin host do). Linux only: elsewhere /proc is missing and every
// process reads as gone.
package procgroup

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// Info is what /proc says about one pid. The zero Info is a pid with no process.
type Info struct {
	Alive bool   // exists and is neither a zombie nor dead
	Start uint64 // start time, clock ticks since boot: with the pid, one process
	Group int    // process group
}

// Inspect reads /proc/PID/stat. A pid with no process is not an error: Alive is false.
// Zombies count as gone: where nobody reaps orphans they linger for ever.
func Inspect(pid int) (Info, error) {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ESRCH) {
		return Info{}, nil
	}
	if err != nil {
		return Info{}, fmt.Errorf("inspect pid %d: %w", pid, err)
	}
	info, err := ParseStat(stat)
	if err != nil {
		return Info{}, fmt.Errorf("inspect pid %d: %w", pid, err)
	}
	return info, nil
}

// ParseStat reads the state, process group and start time from /proc/PID/stat:
// "pid (comm) state ppid pgrp ... starttime(22nd) ...", where comm may contain spaces
// and parentheses.
func ParseStat(stat []byte) (Info, error) {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return Info{}, errors.New("malformed stat")
	}
	f := bytes.Fields(stat[i+1:]) // f[0] is field 3, the state
	if len(f) < 20 || len(f[0]) != 1 {
		return Info{}, errors.New("malformed stat")
	}
	group, err1 := strconv.Atoi(string(f[2]))
	start, err2 := strconv.ParseUint(string(f[19]), 10, 64)
	if err1 != nil || err2 != nil {
		return Info{}, errors.New("malformed stat")
	}
	state := f[0][0]
	return Info{Alive: state != 'Z' && state != 'X' && state != 'x', Start: start, Group: group}, nil
}

// Alive reports whether a process of group pgid still runs. kill(-pgid, 0) counts
// zombies, and orphaned zombies stay until init reaps them (never, where flow itself is
// PID 1 in a container), so where /proc exists, a group of zombies counts as gone.
func Alive(pgid int) bool {
	if errors.Is(syscall.Kill(-pgid, 0), syscall.ESRCH) {
		return false
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return true // no /proc: trust kill
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if info, err := Inspect(pid); err == nil && info.Alive && info.Group == pgid {
			return true
		}
	}
	return false
}

// Survives reports whether the group led by process pgid, started at start, still
// runs: its leader is that same process, or the leader is gone and members remain
// (Linux does not give a pid that is still some group's id to a new process, so they
// are the group's own). A leader's pid now held by another process is not a survivor.
func Survives(pgid int, start uint64) bool {
	if pgid <= 0 || start == 0 {
		return false
	}
	leader, err := Inspect(pgid)
	if err != nil {
		return false
	}
	switch leader.Start {
	case start: // the leader itself, alive or a zombie with members left
		return leader.Alive || Alive(pgid)
	case 0: // the leader is gone: any member left is the group's own
		return Alive(pgid)
	}
	return false // the pid is another process's now
}

// Stop sends SIGTERM to group pgid, waits until the group is gone or grace has passed,
// then sends SIGKILL. The group is tracked meanwhile, so an exit that cannot wait
// (KillTracked, a second Ctrl-C) kills it too: a survivor of an earlier run that a
// resume is stopping is no command of this process's, and would run on.
func Stop(pgid int, grace time.Duration) {
	defer Track(pgid)()
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	deadline := time.Now().Add(grace)
	for time.Now().Before(deadline) {
		if !Alive(pgid) {
			return
		}
		time.Sleep(poll)
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
}

// poll is how often Stop checks whether a group is gone.
const poll = 25 * time.Millisecond

// The groups this process's tasks started that still run.
var tracked = struct {
	sync.Mutex
	live map[int]int // pgid -> commands running in it
}{live: map[int]int{}}

// Track records that group pgid runs a command of this process until the returned func
// is called (once or more). Safe for concurrent use.
func Track(pgid int) (ended func()) {
	tracked.Lock()
	tracked.live[pgid]++
	tracked.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			tracked.Lock()
			if tracked.live[pgid]--; tracked.live[pgid] <= 0 {
				delete(tracked.live, pgid)
			}
			tracked.Unlock()
		})
	}
}

// KillTracked sends SIGKILL to every group Track holds, for an exit that cannot wait,
// and returns those it could not signal, sorted; a group already gone is not one.
func KillTracked() (left []int) {
	tracked.Lock()
	defer tracked.Unlock()
	for pgid := range tracked.live {
		if err := syscall.Kill(-pgid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
			left = append(left, pgid)
		}
	}
	slices.Sort(left)
	return left
}
