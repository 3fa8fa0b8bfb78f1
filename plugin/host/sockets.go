package host

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// sockets is where this flow process's plugins put their unix sockets: one directory
// per process under $TMPDIR, flow-plugins-PID-*, that go-plugin makes a directory per
// plugin process in (PLUGIN_UNIX_SOCKET_DIR) and removes when that process ended. The
// root itself is removed once it is empty, so a command leaves $TMPDIR as it found it;
// the root of a flow that was SIGKILLed is removed by the next flow that starts a
// plugin.
var sockets = &socketRoot{}

const socketPrefix = "flow-plugins-"

type socketRoot struct {
	mu  sync.Mutex
	dir string
}

// acquire returns the root, made if need be, and holds it until release: a plugin
// started meanwhile makes its directory in it before tidy may remove it.
func (r *socketRoot) acquire() (string, error) {
	r.mu.Lock()
	if r.dir != "" {
		if _, err := os.Stat(r.dir); err == nil {
			return r.dir, nil
		}
	}
	sweepSockets()
	dir, err := os.MkdirTemp("", fmt.Sprintf("%s%d-", socketPrefix, os.Getpid()))
	if err != nil {
		r.mu.Unlock()
		return "", fmt.Errorf("plugin socket directory: %w", err)
	}
	r.dir = dir
	return dir, nil
}

// release ends acquire, removing the root when the plugin did not start.
func (r *socketRoot) release() {
	r.removeEmpty()
	r.mu.Unlock()
}

// tidy removes the root when no plugin's directory is left in it.
func (r *socketRoot) tidy() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.removeEmpty()
}

func (r *socketRoot) removeEmpty() {
	if r.dir != "" && os.Remove(r.dir) == nil {
		r.dir = ""
	}
}

// sweepSockets removes the socket roots of flow processes that no longer run.
func sweepSockets() {
	matches, _ := filepath.Glob(filepath.Join(os.TempDir(), socketPrefix+"*"))
	for _, m := range matches {
		pid, ok := socketOwner(filepath.Base(m))
		if !ok || pid == os.Getpid() || alive(pid) {
			continue
		}
		_ = os.RemoveAll(m)
	}
}

// socketOwner is the pid of the process whose socket root name is,
// flow-plugins-PID-RANDOM; ok is false for any other name.
func socketOwner(name string) (pid int, ok bool) {
	rest, found := strings.CutPrefix(name, socketPrefix)
	if !found {
		return 0, false
	}
	pidText, _, found := strings.Cut(rest, "-")
	pid, err := strconv.Atoi(pidText)
	if !found || err != nil || pid <= 0 {
		return 0, false
	}
	return pid, true
}

// alive reports whether process pid exists (signal 0 finds it or is refused) and is
// not a zombie: a plugin host killed with its flow waits, a zombie, for the init
// process to reap it, and that may take seconds.
func alive(pid int) bool {
	if zombie(pid) {
		return false
	}
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	err = p.Signal(syscall.Signal(0))
	return err == nil || strings.Contains(err.Error(), "operation not permitted")
}

// zombie reports whether /proc says pid has exited and waits to be reaped.
func zombie(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// pid (comm) state ...: comm may hold spaces and parentheses, the last ")" ends it.
	i := strings.LastIndexByte(string(stat), ')')
	return i >= 0 && i+2 < len(stat) && stat[i+2] == 'Z'
}
