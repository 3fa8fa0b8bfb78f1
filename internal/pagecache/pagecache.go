// Package pagecache lets tests see whether a file's writes reached the disk: the
// kernel's page cache holds a written page dirty (or under writeback) until it is
// written back, and fsync or fdatasync returns only once none is left. A test of a
// promise such as "a commit is synced before it is reported" checks Unsynced right
// after the call. It is imported only by tests.
package pagecache

import "errors"

// ErrUnsupported is returned where the kernel cannot report a file's dirty pages: not
// Linux, or Linux before 6.5 (which lacks cachestat(2)) without the privilege to read
// the pages' flags (/proc/kpageflags needs CAP_SYS_ADMIN).
var ErrUnsupported = errors.New("the kernel cannot report a file's dirty pages (cachestat needs Linux 6.5+; before it, /proc/kpageflags needs root)")

// Observable reports whether Unsynced tells, in dir's file system, a file written
// but not synced from one that was synced: it writes and syncs a scratch file there.
// It returns ErrUnsupported, or an error naming what it saw (a file system that keeps
// no dirty pages, such as tmpfs), or nil.
func Observable(dir string) error { return observable(dir) }

// Unsynced returns how many pages of the file at path are dirty or under
// writeback: written, and not yet known to be on disk.
func Unsynced(path string) (pages uint64, err error) { return unsynced(path) }
