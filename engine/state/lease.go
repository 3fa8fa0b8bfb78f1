package state

import (
	"errors"
	"time"
)

// LeaseFor is how long a writer's lock on a PostgreSQL state counts as confirmed
// after the last round trip that confirmed it (see Store.Lease).
const LeaseFor = leaseFor

// Lease reports whether the writer may start new work now. A file's lock cannot be
// lost while the Store is open: held is always true. A PostgreSQL writer's lock is
// held only if a round trip on its locked session (any call, or a reconnection that
// found the state's epoch still the writer's) was sent less than LeaseFor ago and no
// call saw the connection break since; otherwise it is in doubt until ConfirmLease
// succeeds. A writer that took the lock from a holder whose session ended without it
// releasing the lock (a crash, a pause, a partition) holds no lease for LeaseFor after
// it took the lock, until that holder's lease has run out: two writers never both hold
// one. Close releases the lock and records that it did. lost is the *FencedError once another writer took the state over: held
// is then false for good, and every later call fails with it. A read-only Store
// holds no lock (held is false). Lease does no I/O and is safe for concurrent use,
// also while another call waits for a broken connection.
func (s *Store) Lease() (held bool, lost error) {
	switch {
	case s == nil || s.readOnly:
		return false, nil
	case s.pg == nil:
		return true, nil
	}
	return s.pg.lease()
}

// ConfirmLease renews a PostgreSQL writer's lease with one round trip that checks the
// state's epoch is still the writer's, after waiting out the previous holder's lease
// (see Lease). It waits for a broken connection as every call
// does (Options.RetryFor, less after GiveUpWithin) and takes the lock back only under
// the same epoch; it returns the *FencedError if another writer took the state over.
// On a file it does nothing.
func (s *Store) ConfirmLease() error {
	switch {
	case s == nil || s.readOnly:
		return errors.New("confirm the state's lock: not a writer")
	case s.pg == nil:
		return nil
	}
	if err := s.pg.confirmLease(); err != nil {
		return s.errorf(err, "confirm the writer's lock")
	}
	return nil
}

// GiveUpWithin bounds how long calls on a PostgreSQL state wait for a broken
// connection: from now on, none waits past d from now, those waiting already
// included; a call that gives up fails. An interrupted run calls it, so that a
// Ctrl-C during an outage ends within d (what was not written then stays unwritten).
// A file ignores it. Safe for concurrent use.
func (s *Store) GiveUpWithin(d time.Duration) {
	if s != nil && s.pg != nil {
		s.pg.giveUpWithin(d)
	}
}
