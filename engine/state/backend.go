package state

import (
	"errors"
	"net/url"
	"os"
	"syscall"
	"time"
)

// A Store keeps its state in one of two places: a bbolt file (the default, for
// one machine) or a PostgreSQL database (a URL, for a team: see pg_store.go). The
// exported methods are the same for both and so is what they store: every run and
// instance is the same JSON document in either.

var statFile = os.Stat

// Lock returns who holds the writer lock of the state at loc, if anyone. For a
// file it reports only whether a writer holds it now (and its pid, when known).
func Lock(loc string) (*LockInfo, error) {
	if IsURL(loc) {
		s, err := Open(loc, Options{ReadOnly: true})
		if err != nil {
			return nil, err
		}
		defer s.Close()
		return s.pg.lockInfo()
	}
	info := &LockInfo{Location: loc}
	s, err := Open(loc, Options{ReadOnly: true, LockTimeout: 100 * time.Millisecond})
	var le *LockedError
	if errors.As(err, &le) {
		info.Held = true
		if le.PID > 0 {
			info.Holder = &Holder{PID: le.PID}
		}
		return info, nil
	}
	if err != nil {
		return nil, err
	}
	return info, s.Close()
}

// WriterActive reports whether, while this read-only Store is open, a writer holds
// the state: only possible for PostgreSQL, whose readers do not exclude writers.
// A run recorded as running is then really running.
func (s *Store) WriterActive() bool {
	if s == nil || s.pg == nil || !s.readOnly {
		return false
	}
	info, err := s.pg.lockInfo()
	if err != nil || !info.Held {
		return false
	}
	// A holder on this machine whose process is gone is not writing: its lock lasts
	// only until its server process notices the closed connection.
	if h := info.Holder; h != nil && h.PID > 0 {
		if host, _ := os.Hostname(); host == h.Host && !processAlive(h.PID) {
			return false
		}
	}
	return true
}

// processAlive reports whether process pid exists (signal 0; EPERM means it does).
func processAlive(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	defer p.Release()
	return !errors.Is(p.Signal(syscall.Signal(0)), os.ErrProcessDone)
}

// Display is loc as messages show it: a PostgreSQL URL without its password.
func Display(loc string) string {
	if !IsURL(loc) {
		return loc
	}
	u, err := url.Parse(loc)
	if err != nil {
		return "a malformed PostgreSQL URL"
	}
	return u.Redacted()
}
