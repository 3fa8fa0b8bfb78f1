package state

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"syscall"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// schemaVersion is the version of the on-disk layout this package writes and
// reads; see the package documentation.
const schemaVersion = 1

var (
	bucketMeta      = []byte("meta")
	bucketRuns      = []byte("runs")
	bucketRun       = []byte("run")
	bucketInstances = []byte("instances")
	bucketLogs      = []byte("logs")
	keySchema       = []byte("schema_version")
	keyLatest       = []byte("latest")
)

// boltOptions are the bbolt options for every open of a state file. The
// freelist is not synced (cheaper commits; bbolt rebuilds it on a writable
// open) and kept in a hash map (cheap allocation in large files).
func boltOptions(readOnly bool, lockTimeout time.Duration, openFile func(string, int, os.FileMode) (*os.File, error)) *bolt.Options {
	return &bolt.Options{
		Timeout:        boltTimeout(lockTimeout),
		ReadOnly:       readOnly,
		NoFreelistSync: true,
		FreelistType:   bolt.FreelistMapType,
		OpenFile:       openFile,
	}
}

// flockRetry is how often bbolt retries a busy lock; it gives up as soon as
// less than one retry interval of its Timeout is left.
const flockRetry = 50 * time.Millisecond

// boltTimeout is the bbolt lock timeout that makes it give up after d. It is
// never 0, which would make bbolt wait forever; for d <= 0 bbolt tries
// exactly once.
func boltTimeout(d time.Duration) time.Duration {
	if d > 0 {
		return d + flockRetry
	}
	return time.Nanosecond
}

// badFormat is the reason a file is not a usable flow state; the caller turns
// it into a *FormatError naming the file.
type badFormat string

func (r badFormat) Error() string { return string(r) }

// presize is the size a new state file starts with: room for a run of a few hundred
// instances before bbolt must grow the file.
const presize = 1 << 20

// createState builds a new state file in a temporary file next to path and then
// links it to path, so that path never names a partial state. The file is empty but
// for first, when set: it becomes run 1, and first.ID is set once the file is in
// place. If some other process creates path in the meantime, theirs is kept and
// ours is discarded (first.ID stays 0); Open then validates whatever is at path.
func createState(path string, first *Run) (err error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create directory: %w", err)
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("create temporary file: %w", err)
	}
	tmpName := tmp.Name()
	// Whether or not the link succeeds, the temporary name goes away; once
	// linked the file lives on under path.
	defer os.Remove(tmpName)
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return fmt.Errorf("create temporary file: %w", err)
	}

	image, firstID, err := newImage(first)
	if err == nil {
		err = writeImage(tmp, image)
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("initialise %s: %w", tmpName, err)
	}

	// Link rather than rename: link never replaces an existing file.
	if err := os.Link(tmpName, path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return nil // created concurrently by someone else; use theirs
		}
		// The file system may not support hard links: fall back to rename,
		// after checking (racily, but nothing better is portable) that
		// nothing has appeared at path.
		if _, serr := os.Lstat(path); serr == nil {
			return nil
		}
		if err := os.Rename(tmpName, path); err != nil {
			return fmt.Errorf("move new state into place: %w", err)
		}
	}
	if err := syncDir(dir); err != nil {
		return err
	}
	if first != nil {
		first.ID = firstID
	}
	return nil
}

// syncDir makes the creation of a directory entry in dir durable.
func syncDir(dir string) error {
	if runtime.GOOS == "windows" {
		return nil // directories cannot be fsynced there; NTFS journals metadata
	}
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync directory: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) {
		return fmt.Errorf("sync directory: %w", err)
	}
	return nil
}

// openBolt opens the existing file at path with bbolt and validates it,
// taking a shared lock (readOnly) or an exclusive one, waiting up to
// lockTimeout for it; waited is about how long that took. It never creates or writes the file: bbolt does not write while
// opening a non-empty file with NoFreelistSync, and empty files are refused
// before bbolt sees them.
//
// deep additionally checks every page reachable from the root (see
// structure), so that a corrupt file is reported here rather than upsetting
// bbolt: a writable open walks the whole file in a goroutine of bbolt's own
// to rebuild the freelist, where reading outside the file crashes the
// process, and it panics over inconsistencies without waiting for that
// goroutine. want, if not nil, is the file a previous open validated; if
// path no longer names it, openBolt fails.
//
// Errors are a *LockedError, a *FormatError, or an error from the file
// system (not naming the file; the caller adds that).
func openBolt(path string, readOnly, deep bool, lockTimeout time.Duration, want os.FileInfo) (db *bolt.DB, info os.FileInfo, waited time.Duration, err error) {
	var (
		file    *os.File
		fileErr error
	)
	openFile := func(name string, flag int, perm os.FileMode) (*os.File, error) {
		f, err := os.OpenFile(name, flag&^os.O_CREATE, perm)
		if err != nil {
			fileErr = err
			return nil, err
		}
		fi, err := f.Stat()
		switch {
		case err != nil:
			fileErr = err
		case !fi.Mode().IsRegular():
			err = badFormat("not a regular file")
		case fi.Size() == 0:
			err = badFormat("the file is empty")
		case want != nil && !os.SameFile(fi, want):
			err = errors.New("the file was replaced while it was being opened")
			fileErr = err
		}
		if err != nil {
			f.Close()
			return nil, err
		}
		file, info = f, fi
		return f, nil
	}

	// bbolt trusts the file's contents: a corrupt file may make it panic,
	// index out of range or read memory outside the file (which, with
	// SetPanicOnFault, the runtime reports as a panic too). Recover any of
	// these into a FormatError. The deep check is meant to make this
	// unreachable, since it cannot be cleaned up fully: if bolt.Open itself
	// panics, its memory map is lost, and the map keeps the file (and so
	// its lock) open until the process exits.
	defer func() {
		if r := recover(); r != nil {
			if db != nil {
				db.Close() // the panic unwound the read transaction, so this does not block
			} else if file != nil {
				file.Close()
			}
			db, info, err = nil, nil, &FormatError{Path: path, Reason: fmt.Sprintf("the file is corrupt (%v)", r)}
		}
	}()
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))

	start := time.Now()
	db, err = bolt.Open(path, 0o600, boltOptions(readOnly, lockTimeout, openFile))
	waited = time.Since(start)
	if err != nil {
		var errno syscall.Errno
		var bad badFormat
		switch {
		case errors.As(err, &bad):
			return nil, nil, waited, &FormatError{Path: path, Reason: string(bad)}
		case fileErr != nil:
			return nil, nil, waited, err
		case errors.Is(err, berrors.ErrTimeout):
			return nil, nil, waited, &LockedError{Path: path, PID: holderPID(path)}
		case errors.As(err, &errno):
			return nil, nil, waited, err // an I/O or locking failure, not a format problem
		default:
			return nil, nil, waited, &FormatError{Path: path, Reason: "not a bbolt database: " + err.Error()}
		}
	}
	if err := db.View(func(tx *bolt.Tx) error { return validate(tx, file, info.Size(), deep) }); err != nil {
		db.Close()
		var bad badFormat
		if errors.As(err, &bad) {
			return nil, nil, waited, &FormatError{Path: path, Reason: string(bad)}
		}
		return nil, nil, waited, err
	}
	return db, info, waited, nil
}

// validate checks that tx reads a flow state of a schema this package
// understands, in file, which is size bytes long; see openBolt for deep.
func validate(tx *bolt.Tx, file io.ReaderAt, size int64, deep bool) error {
	// Every page below the high water mark must lie within the file; a
	// truncated file fails here, before anything beyond its end is read.
	hwm := tx.Size()
	if hwm > size {
		return badFormat(fmt.Sprintf("the file is truncated (%d bytes, its pages need %d)", size, hwm))
	}
	if deep {
		pageSize := tx.DB().Info().PageSize
		root := uint64(tx.Cursor().Bucket().Root())
		if err := structure(file, pageSize, uint64(hwm)/uint64(pageSize), root); err != nil {
			return badFormat("the file is corrupt: " + err.Error())
		}
	}
	meta := tx.Bucket(bucketMeta)
	if meta == nil {
		return badFormat(`it has no "meta" bucket`)
	}
	raw := meta.Get(keySchema)
	if raw == nil {
		return badFormat("it has no schema version")
	}
	v, err := strconv.Atoi(string(raw))
	switch {
	case err != nil || v < 1:
		return badFormat(fmt.Sprintf("invalid schema version %q", raw))
	case v > schemaVersion:
		return badFormat(fmt.Sprintf("schema version %d is newer than this flow supports (%d); upgrade flow", v, schemaVersion))
	}
	if tx.Bucket(bucketRuns) == nil || tx.Bucket(bucketRun) == nil {
		return badFormat("it lacks the runs buckets")
	}
	return nil
}
