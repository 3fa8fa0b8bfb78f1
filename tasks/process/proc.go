package process

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// procInfo is what /proc says about one pid.
type procInfo struct {
	alive bool // exists and is neither a zombie nor dead
	start uint64
	pgrp  int
}

// inspect reads /proc/PID/stat. A pid with no process is not an error: alive is false.
// Zombies count as gone: where nobody reaps orphans they linger for ever.
func inspect(pid int) (procInfo, error) {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ESRCH) {
		return procInfo{}, nil
	}
	if err != nil {
		return procInfo{}, fmt.Errorf("inspect pid %d: %w", pid, err)
	}
	info, err := parseStat(stat)
	if err != nil {
		return procInfo{}, fmt.Errorf("inspect pid %d: %w", pid, err)
	}
	return info, nil
}

// parseStat reads the state, process group and start time from /proc/PID/stat:
// "pid (comm) state ppid pgrp ... starttime(22nd) ...", where comm may contain spaces
// and parentheses.
func parseStat(stat []byte) (procInfo, error) {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return procInfo{}, errors.New("malformed stat")
	}
	f := strings.Fields(string(stat[i+1:])) // f[0] is field 3, the state
	if len(f) < 20 || len(f[0]) != 1 {
		return procInfo{}, errors.New("malformed stat")
	}
	pgrp, err1 := strconv.Atoi(f[2])
	start, err2 := strconv.ParseUint(f[19], 10, 64)
	if err1 != nil || err2 != nil {
		return procInfo{}, errors.New("malformed stat")
	}
	state := f[0][0]
	return procInfo{alive: state != 'Z' && state != 'X' && state != 'x', start: start, pgrp: pgrp}, nil
}

// argvString shows an argv the way it is written in HCL: ["sleep", "30"].
func argvString(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = strconv.Quote(a)
	}
	return "[" + strings.Join(q, ", ") + "]"
}
