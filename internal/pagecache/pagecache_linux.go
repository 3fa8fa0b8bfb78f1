package pagecache

import (
	"bytes"
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

func unsynced(path string) (uint64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	var st unix.Cachestat_t
	// Len 0: from Off to the end of the file.
	err = unix.Cachestat(uint(f.Fd()), &unix.CachestatRange{}, &st, 0)
	if errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EPERM) { // EPERM: a seccomp filter
		return 0, ErrUnsupported
	}
	if err != nil {
		return 0, fmt.Errorf("cachestat %s: %w", path, err)
	}
	return st.Dirty + st.Writeback, nil
}

func observable(dir string) error {
	f, err := os.CreateTemp(dir, "pagecache-probe-")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	if _, err := f.Write(bytes.Repeat([]byte{'x'}, 1<<16)); err != nil {
		return err
	}
	written, err := unsynced(f.Name())
	if err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	synced, err := unsynced(f.Name())
	if err != nil {
		return err
	}
	if written == 0 || synced != 0 {
		return fmt.Errorf("the file system of %s does not show unsynced pages (%d after a write, %d after fsync)", dir, written, synced)
	}
	return nil
}
