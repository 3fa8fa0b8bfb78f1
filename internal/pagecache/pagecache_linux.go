package pagecache

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"runtime"

	"golang.org/x/sys/unix"
)

// unsynced asks cachestat(2) (Linux 6.5+) and, where the kernel lacks it (Debian 12
// runs 6.1), the page flags of the file's pages (kpageflags, below).
func unsynced(path string) (uint64, error) {
	n, err := cachestat(path)
	if errors.Is(err, ErrUnsupported) {
		return kpageflags(path)
	}
	return n, err
}

func cachestat(path string) (uint64, error) {
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

// The page flags of /proc/kpageflags (Documentation/admin-guide/mm/pagemap.rst).
const (
	kpfDirty     = 1 << 4
	kpfWriteback = 1 << 8
	pmPresent    = 1 << 63
	pmPFN        = 1<<55 - 1
)

// kpageflags counts the file's pages that are dirty or under writeback from their page
// flags: it maps the file, touches each page so the mapping points at the page cache's
// own page, finds its frame in /proc/self/pagemap and reads its flags in
// /proc/kpageflags. It needs CAP_SYS_ADMIN (without it pagemap hides the frames), which
// tests run as root have; else it returns ErrUnsupported.
func kpageflags(path string) (uint64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	if fi.Size() == 0 {
		return 0, nil
	}
	data, err := unix.Mmap(int(f.Fd()), 0, int(fi.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return 0, fmt.Errorf("map %s: %w", path, err)
	}
	defer unix.Munmap(data)
	pagemap, err := os.Open("/proc/self/pagemap")
	if err != nil {
		return 0, ErrUnsupported
	}
	defer pagemap.Close()
	flags, err := os.Open("/proc/kpageflags")
	if err != nil {
		return 0, ErrUnsupported
	}
	defer flags.Close()
	size := os.Getpagesize()
	base := uintptr(unsafePointer(data))
	var n uint64
	var touched byte
	for off := 0; off < len(data); off += size {
		touched += data[off] // fault the page in: the mapping now holds the cached page
		var entry [8]byte
		if _, err := pagemap.ReadAt(entry[:], int64((base+uintptr(off))/uintptr(size))*8); err != nil {
			return 0, fmt.Errorf("read /proc/self/pagemap: %w", err)
		}
		pm := binary.LittleEndian.Uint64(entry[:])
		pfn := pm & pmPFN
		if pm&pmPresent == 0 {
			continue // not resident: nothing of it is waiting to be written
		}
		if pfn == 0 {
			return 0, ErrUnsupported // frames hidden: no CAP_SYS_ADMIN
		}
		var kf [8]byte
		if _, err := flags.ReadAt(kf[:], int64(pfn)*8); err != nil {
			return 0, fmt.Errorf("read /proc/kpageflags: %w", err)
		}
		if binary.LittleEndian.Uint64(kf[:])&(kpfDirty|kpfWriteback) != 0 {
			n++
		}
	}
	runtime.KeepAlive(touched) // the reads that faulted the pages in stay
	return n, nil
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
