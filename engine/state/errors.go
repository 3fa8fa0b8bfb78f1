package state

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// ErrNotFound is returned, wrapped, when a run asked for by id does not
// exist. Test for it with errors.Is.
var ErrNotFound = errors.New("not found")

// ErrClosed is returned, wrapped, by every method of a Store that has been
// closed (or of a zero Store). Test for it with errors.Is.
var ErrClosed = errors.New("state store is closed")

// LockedError is returned by Open when another process holds the state file's
// lock for longer than Options.LockTimeout: any other Store for a writable
// Open, a writable Store for a read-only Open.
//
// Path is the path given to Open. PID is the process id of the writer holding
// the lock as recorded in Path+".pid", or 0 when it is unknown (the holder
// is a reader, the pid file is missing or names a process that no longer
// exists).
//
// For a state in PostgreSQL, Holder names the writer holding it (host, pid, user,
// start) and PID is the holder's.
type LockedError struct {
	Path   string
	PID    int
	Holder *Holder `json:",omitempty"`
}

// Error describes the lock conflict, naming the file and, when known, the
// holder's process id.
func (e *LockedError) Error() string {
	if e.Holder != nil {
		return fmt.Sprintf("state %s is in use by %s", e.Path, e.Holder)
	}
	if e.PID > 0 {
		return fmt.Sprintf("state file %q is in use by another flow process (pid %d)", e.Path, e.PID)
	}
	return fmt.Sprintf("state file %q is in use by another flow process", e.Path)
}

// FormatError is returned by Open when the file at Path exists but is not a
// flow state file this version can use: it is empty, not a bbolt database,
// truncated or corrupt, a bbolt database of someone else, or of a newer
// schema version. Reason says which. The file is left exactly as it was.
type FormatError struct {
	Path   string
	Reason string
}

// Error describes the problem, naming the file and stating it was not
// modified.
func (e *FormatError) Error() string {
	return fmt.Sprintf("%q is not a flow state file: %s; it was left untouched", e.Path, e.Reason)
}

// pidPath is where a writable Store records its process id.
func pidPath(path string) string { return path + ".pid" }

// holderPID returns the pid recorded next to path if that process still
// exists, else 0. It is called only when the lock is busy, so a stale pid file
// left by a killed process never matters otherwise.
func holderPID(path string) int {
	b, err := os.ReadFile(pidPath(path))
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return 0
	}
	if pid == os.Getpid() {
		return pid
	}
	p, err := os.FindProcess(pid)
	if err != nil {
		return 0
	}
	defer p.Release()
	// Signal 0 probes for existence. EPERM means it exists but belongs to
	// someone else; platforms without signal 0 answer with another error,
	// which is taken to mean "alive".
	if err := p.Signal(syscall.Signal(0)); errors.Is(err, os.ErrProcessDone) {
		return 0
	}
	return pid
}
