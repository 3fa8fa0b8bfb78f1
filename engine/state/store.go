package state

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// MaxLogSize is the most captured output kept per task instance: Commit keeps
// the last MaxLogSize bytes of a longer log and drops the beginning.
const MaxLogSize = 1 << 20

// defaultLockTimeout is used when Options.LockTimeout is 0.
const defaultLockTimeout = time.Second

// Options configures Open. The zero Options opens the file for writing and
// waits up to one second for another process's lock.
type Options struct {
	// ReadOnly opens the file with a shared lock and never writes anything:
	// not the state file, not its directory, not a pid file. A missing file
	// is an error instead of being created. Write methods of a read-only
	// Store fail. Readers share the file with each other but keep writers
	// out until they are closed.
	ReadOnly bool

	// LockTimeout is how long Open waits for a lock another process holds
	// before it returns a *LockedError; 0 (or less) means 1s.
	LockTimeout time.Duration

	// FirstRun, if set, is stored as the first run of a file this Open creates, in
	// the transaction that creates the file: the file appears with the run in it,
	// durably, in one step instead of a creation and then a commit. Open then sets
	// FirstRun.ID, as CreateRun would. If the file exists already (or another process
	// creates it first), FirstRun.ID stays 0 and the caller stores its run with
	// CreateRun. An invalid FirstRun fails Open before anything is created. Ignored
	// when ReadOnly.
	FirstRun *Run

	// RetryFor bounds how long a call on a PostgreSQL state waits for a broken
	// connection to come back (the server restarting) before it fails; 0 means 60s.
	// Files ignore it.
	RetryFor time.Duration

	// Waiting, if set, is told once per outage that a call on a PostgreSQL state
	// lost its connection and waits up to the time left for it to come back, so that
	// a long wait shows; and again with a nil error once it is back: only after a call
	// on the new connection succeeded (for a writer, after it re-confirmed its epoch),
	// never when the calls gave up. It is called with the Store's connection held:
	// it must not call the Store.
	Waiting func(err error, left time.Duration)
}

// DefaultPath returns the state file to use when the user names none: the
// value of the environment variable FLOW_STATE if it is set and not empty,
// else ".flow/state.db" (relative to the working directory).
func DefaultPath() string {
	if p := os.Getenv("FLOW_STATE"); p != "" {
		return p
	}
	return filepath.Join(".flow", "state.db")
}

// Store is an open state file.
//
// The zero Store is not usable: its methods return ErrClosed. Use Open.
// A Store may be used from many goroutines at once: reads run concurrently,
// and bbolt serialises writes (each write method is one transaction). Every
// write is durable (fsynced) when the method returns nil, and atomic: a
// write that fails leaves the file as it was before the call.
// Records returned by a Store are copies owned by the caller.
type Store struct {
	path     string
	readOnly bool
	db       *bolt.DB
	pg       *pgStore // a state in PostgreSQL instead of db

	closeOnce sync.Once
	closeErr  error
}

// Open opens the state file at path.
//
// A writable Open (the default) of a missing file creates it, and its parent
// directory with mode 0700 if needed; the file gets mode 0600 and is created
// atomically, complete, or not at all. A read-only Open of a missing file
// returns an error that wraps fs.ErrNotExist.
//
// If the file exists but is not a flow state of a schema this version reads
// (empty, not a bbolt database, truncated or corrupt, a bbolt database
// without flow's buckets, or written by a newer flow), Open returns a
// *FormatError and the file is not modified in any way.
//
// If another process holds the lock for longer than opts.LockTimeout, Open
// returns a *LockedError. A writable Store records the calling process's pid
// in path+".pid" (best effort; failing to write it does not fail Open) so that
// such errors can name it; Close removes it.
//
// Open waits at most opts.LockTimeout in total for locks (time spent
// checking the file does not count). Two Stores of one file in the same
// process exclude each other just as two processes do. Opening reads the
// whole file to check its structure, so its cost grows with the file; the
// cost of the methods does not.
//
// Other failures are returned wrapped, naming the file. On any error nothing
// stays open or locked. Open may be called from many goroutines.
func Open(path string, opts Options) (*Store, error) {
	if path == "" {
		return nil, errors.New("open state file: empty path")
	}
	if IsURL(path) {
		return openPG(path, opts)
	}
	timeout := opts.LockTimeout
	if timeout <= 0 {
		timeout = defaultLockTimeout
	}

	if !opts.ReadOnly {
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			if opts.FirstRun != nil {
				if err := opts.FirstRun.check(); err != nil {
					return nil, fmt.Errorf("create state file %q: first run: %w", path, err)
				}
			}
			if err := createState(path, opts.FirstRun); err != nil {
				return nil, fmt.Errorf("create state file %q: %w", path, err)
			}
		}
	}

	// Validate under a shared lock first, even for a writable Store: a
	// writable bbolt open walks the whole file in a goroutine of its own,
	// where a corrupt file would crash the process instead of yielding an
	// error. The deep check reads every page here first.
	db, info, waited, err := openBolt(path, true, true, timeout, nil)
	if err != nil {
		return nil, wrapOpen(path, err)
	}
	if opts.ReadOnly {
		return &Store{path: path, readOnly: true, db: db}, nil
	}
	if err := db.Close(); err != nil {
		return nil, fmt.Errorf("open state file %q: %w", path, err)
	}
	// Now the exclusive lock, on the very file just validated. It is
	// validated again (cheaply) in case another flow changed it in between.
	db, _, _, err = openBolt(path, false, false, timeout-waited, info)
	if err != nil {
		return nil, wrapOpen(path, err)
	}
	// Holding the exclusive lock, the pid file is ours to write.
	_ = os.WriteFile(pidPath(path), []byte(strconv.Itoa(os.Getpid())+"\n"), 0o600)
	st := &Store{path: path, db: db}
	if err := st.refuseMoved(); err != nil {
		st.Close()
		return nil, err
	}
	return st, nil
}

// wrapOpen names the file in err unless err already does.
func wrapOpen(path string, err error) error {
	var le *LockedError
	var fe *FormatError
	if errors.As(err, &le) || errors.As(err, &fe) {
		return err
	}
	return fmt.Errorf("open state file %q: %w", path, err)
}

// Path returns the path (or URL) the Store was opened with ("" for the zero Store).
func (s *Store) Path() string {
	if s == nil {
		return ""
	}
	return s.path
}

// Close waits for running calls to finish, removes the pid file of a
// writable Store, and releases the file and its lock. Calls made after Close
// return ErrClosed. Close may be called more than once; later calls return
// what the first returned.
func (s *Store) Close() error {
	if s != nil && s.pg != nil {
		s.closeOnce.Do(func() { s.closeErr = s.pg.close() })
		return s.closeErr
	}
	if s == nil || s.db == nil {
		return nil
	}
	s.closeOnce.Do(func() {
		if !s.readOnly {
			// Still holding the lock, so the pid file is ours.
			_ = os.Remove(pidPath(s.path))
		}
		if err := s.db.Close(); err != nil {
			s.closeErr = fmt.Errorf("close state file %q: %w", s.path, err)
		}
	})
	return s.closeErr
}

// view runs fn in a read transaction.
func (s *Store) view(fn func(*bolt.Tx) error) error {
	if s == nil || s.db == nil {
		return ErrClosed
	}
	return closedErr(s.db.View(fn))
}

// update runs fn in a write transaction, committed (and fsynced) if fn
// returns nil and rolled back otherwise.
func (s *Store) update(fn func(*bolt.Tx) error) error {
	if s == nil || s.db == nil {
		return ErrClosed
	}
	return closedErr(s.db.Update(fn))
}

func closedErr(err error) error {
	if errors.Is(err, berrors.ErrDatabaseNotOpen) {
		return ErrClosed
	}
	return err
}

// errorf wraps err with the store's file name and the operation.
func (s *Store) errorf(err error, format string, args ...any) error {
	if s.pg != nil {
		var fe *FencedError
		if errors.As(err, &fe) {
			return err
		}
		return fmt.Errorf("state %s: %s: %w", s.pg.loc.display, fmt.Sprintf(format, args...), err)
	}
	return fmt.Errorf("state file %q: %s: %w", s.Path(), fmt.Sprintf(format, args...), err)
}

// itob is the key of run id.
func itob(id uint64) []byte {
	k := make([]byte, 8)
	binary.BigEndian.PutUint64(k, id)
	return k
}
