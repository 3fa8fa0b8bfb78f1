package state

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
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
	return &Store{path: path, db: db}, nil
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

// Path returns the path the Store was opened with ("" for the zero Store).
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
	return fmt.Errorf("state file %q: %s: %w", s.Path(), fmt.Sprintf(format, args...), err)
}

// itob is the key of run id.
func itob(id uint64) []byte {
	k := make([]byte, 8)
	binary.BigEndian.PutUint64(k, id)
	return k
}

// CreateRun stores r as a new run and records it as the latest run. It
// assigns r.ID from a sequence (1, 2, 3, ...; whatever r.ID held is
// ignored) and sets r.ID only if it succeeds; on failure nothing is stored.
func (s *Store) CreateRun(r *Run) error {
	if err := r.check(); err != nil {
		return s.errorf(err, "create run")
	}
	var id uint64
	err := s.update(func(tx *bolt.Tx) (err error) {
		id, err = createRun(tx, r)
		return err
	})
	if err != nil {
		return s.errorf(err, "create run")
	}
	r.ID = id
	return nil
}

// createRun stores a copy of r under the next run ID, with its empty buckets, and
// makes it the latest run; it returns the ID and leaves r as it was.
func createRun(tx *bolt.Tx, r *Run) (uint64, error) {
	runs := tx.Bucket(bucketRuns)
	id, err := runs.NextSequence()
	if err != nil {
		return 0, err
	}
	rec := *r
	rec.ID = id
	data, err := json.Marshal(&rec)
	if err != nil {
		return 0, err
	}
	key := itob(id)
	if err := runs.Put(key, data); err != nil {
		return 0, err
	}
	rb, err := tx.Bucket(bucketRun).CreateBucket(key)
	if err != nil {
		return 0, err
	}
	if _, err := rb.CreateBucket(bucketInstances); err != nil {
		return 0, err
	}
	if _, err := rb.CreateBucket(bucketLogs); err != nil {
		return 0, err
	}
	return id, tx.Bucket(bucketMeta).Put(keyLatest, key)
}

// PutRun replaces the stored record of run r.ID with r, durably. It returns
// an error wrapping ErrNotFound if there is no such run (runs are created
// only by CreateRun). On failure the stored record is unchanged.
func (s *Store) PutRun(r *Run) error {
	if err := r.check(); err != nil {
		return s.errorf(err, "put run")
	}
	err := s.update(func(tx *bolt.Tx) error { return putRun(tx, r) })
	if err != nil {
		return s.errorf(err, "put run %d", r.ID)
	}
	return nil
}

// putRun replaces the record of an existing run.
func putRun(tx *bolt.Tx, r *Run) error {
	runs := tx.Bucket(bucketRuns)
	key := itob(r.ID)
	if runs.Get(key) == nil {
		return ErrNotFound
	}
	data, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return runs.Put(key, data)
}

// GetRun returns run id, or an error wrapping ErrNotFound if there is none.
func (s *Store) GetRun(id uint64) (*Run, error) {
	var r *Run
	err := s.view(func(tx *bolt.Tx) error {
		var err error
		r, err = getRun(tx, id)
		return err
	})
	if err != nil {
		return nil, s.errorf(err, "get run %d", id)
	}
	return r, nil
}

// getRun reads run id; ErrNotFound if absent.
func getRun(tx *bolt.Tx, id uint64) (*Run, error) {
	data := tx.Bucket(bucketRuns).Get(itob(id))
	if data == nil {
		return nil, ErrNotFound
	}
	r := new(Run)
	if err := json.Unmarshal(data, r); err != nil {
		return nil, fmt.Errorf("decode run record: %w", err)
	}
	return r, nil
}

// LatestRun returns the run most recently created by CreateRun, or (nil, nil)
// when the file holds no runs.
func (s *Store) LatestRun() (*Run, error) {
	var r *Run
	err := s.view(func(tx *bolt.Tx) error {
		key := tx.Bucket(bucketMeta).Get(keyLatest)
		if key == nil {
			return nil
		}
		if len(key) != 8 {
			return fmt.Errorf("invalid latest run key %x", key)
		}
		var err error
		r, err = getRun(tx, binary.BigEndian.Uint64(key))
		return err
	})
	if err != nil {
		return nil, s.errorf(err, "get latest run")
	}
	return r, nil
}

// Runs returns every run, oldest (lowest id) first; none is an empty result
// and a nil error.
func (s *Store) Runs() ([]*Run, error) {
	var runs []*Run
	err := s.view(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketRuns).ForEach(func(k, v []byte) error {
			r := new(Run)
			if err := json.Unmarshal(v, r); err != nil {
				return fmt.Errorf("decode run record %x: %w", k, err)
			}
			runs = append(runs, r)
			return nil
		})
	})
	if err != nil {
		return nil, s.errorf(err, "list runs")
	}
	return runs, nil
}

// Commit stores, in one durable transaction, the given instance records of
// run runID (each replacing any record with the same address), the captured
// logs (address -> output, each replacing the stored log; a nil or empty
// slice deletes it; a log longer than MaxLogSize keeps only its last
// MaxLogSize bytes) and, if run is not nil, the run record, whose ID must be
// runID.
//
// Commit is all or nothing: if it returns an error, nothing of it was
// stored and the state is exactly as before the call. Records are checked
// (non-empty addresses, well-formed Values) before anything is written.
// Commit returns an error wrapping ErrNotFound if run runID does not exist.
// It does not retain instances or logs after it returns.
func (s *Store) Commit(runID uint64, run *Run, instances []*Instance, logs map[string][]byte) error {
	if err := s.commit(runID, run, instances, logs); err != nil {
		return s.errorf(err, "commit run %d", runID)
	}
	return nil
}

func (s *Store) commit(runID uint64, run *Run, instances []*Instance, logs map[string][]byte) error {
	// Check and encode everything before starting the transaction.
	if run != nil {
		if err := run.check(); err != nil {
			return err
		}
		if run.ID != runID {
			return fmt.Errorf("run record has id %d", run.ID)
		}
	}
	records := make([]keyed, len(instances))
	for i, in := range instances {
		if err := in.check(); err != nil {
			return err
		}
		data, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("instance %q: %w", in.Address, err)
		}
		records[i] = keyed{in.Address, data}
	}
	logged := make([]keyed, 0, len(logs))
	for addr, data := range logs {
		if addr == "" {
			return errors.New("log with empty address")
		}
		logged = append(logged, keyed{addr, data})
	}
	// In key order: bbolt inserts a key into its page's node by shifting the keys
	// after it, so a first commit of 20,000 records in random order costs O(n²).
	slices.SortFunc(records, keyed.compare)
	slices.SortFunc(logged, keyed.compare)

	return s.update(func(tx *bolt.Tx) error {
		key := itob(runID)
		rb := tx.Bucket(bucketRun).Bucket(key)
		if rb == nil || tx.Bucket(bucketRuns).Get(key) == nil {
			return ErrNotFound
		}
		ib, lb := rb.Bucket(bucketInstances), rb.Bucket(bucketLogs)
		if ib == nil || lb == nil {
			return fmt.Errorf("run %d has no instances or logs bucket", runID)
		}
		for _, r := range records {
			if err := ib.Put([]byte(r.key), r.data); err != nil {
				return fmt.Errorf("instance %q: %w", r.key, err)
			}
		}
		for _, l := range logged {
			var err error
			if data := l.data; len(data) == 0 {
				err = lb.Delete([]byte(l.key))
			} else {
				if len(data) > MaxLogSize {
					data = data[len(data)-MaxLogSize:]
				}
				err = lb.Put([]byte(l.key), data)
			}
			if err != nil {
				return fmt.Errorf("log of %q: %w", l.key, err)
			}
		}
		if run != nil {
			return putRun(tx, run)
		}
		return nil
	})
}

// runBucket returns the bucket of run id, or ErrNotFound.
func runBucket(tx *bolt.Tx, id uint64, name []byte) (*bolt.Bucket, error) {
	rb := tx.Bucket(bucketRun).Bucket(itob(id))
	if rb == nil {
		return nil, ErrNotFound
	}
	b := rb.Bucket(name)
	if b == nil {
		return nil, fmt.Errorf("run %d has no %s bucket", id, name)
	}
	return b, nil
}

// Instances returns the instance records of run runID sorted by address
// (byte-wise), or an error wrapping ErrNotFound if there is no such run. A
// run without instances yields an empty result and a nil error.
func (s *Store) Instances(runID uint64) ([]*Instance, error) {
	var out []*Instance
	err := s.view(func(tx *bolt.Tx) error {
		b, err := runBucket(tx, runID, bucketInstances)
		if err != nil {
			return err
		}
		out = []*Instance{}
		return b.ForEach(func(k, v []byte) error {
			in := new(Instance)
			if err := json.Unmarshal(v, in); err != nil {
				return fmt.Errorf("decode instance %q: %w", k, err)
			}
			out = append(out, in)
			return nil
		})
	})
	if err != nil {
		return nil, s.errorf(err, "read instances of run %d", runID)
	}
	return out, nil
}

// Logs returns the captured output stored for address in run runID, or
// (nil, nil) if none is stored. It returns an error wrapping ErrNotFound if
// there is no such run.
func (s *Store) Logs(runID uint64, address string) ([]byte, error) {
	var out []byte
	err := s.view(func(tx *bolt.Tx) error {
		b, err := runBucket(tx, runID, bucketLogs)
		if err != nil {
			return err
		}
		if v := b.Get([]byte(address)); v != nil {
			out = append([]byte(nil), v...) // v is only valid during the transaction
		}
		return nil
	})
	if err != nil {
		return nil, s.errorf(err, "read log of %q in run %d", address, runID)
	}
	return out, nil
}

// keyed is one value to put, under its key.
type keyed struct {
	key  string
	data []byte
}

func (a keyed) compare(b keyed) int { return strings.Compare(a.key, b.key) }
