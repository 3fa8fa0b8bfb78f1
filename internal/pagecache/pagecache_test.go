package pagecache

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// A write leaves pages unsynced and fsync clears them, in the temporary directory's
// file system (which Observable checks the same way; this test says it in full).
func TestUnsynced(t *testing.T) {
	dir := t.TempDir()
	if err := Observable(dir); err != nil {
		t.Skipf("%v (a skip even under CI: the kernel and file system of a CI machine are not this repository's to choose)", err)
	}
	path := filepath.Join(dir, "f")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(make([]byte, 3*4096)); err != nil {
		t.Fatal(err)
	}
	if n, err := Unsynced(path); err != nil || n == 0 {
		t.Errorf("after a write: Unsynced = %d, %v; want pages", n, err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if n, err := Unsynced(path); err != nil || n != 0 {
		t.Errorf("after fsync: Unsynced = %d, %v; want 0", n, err)
	}
	if _, err := Unsynced(filepath.Join(dir, "missing")); err == nil || errors.Is(err, ErrUnsupported) {
		t.Errorf("Unsynced of a missing file: %v", err)
	}
}

// TestKpageflagsAgreesWithCachestat: where both work (Linux 6.5+, as root), the page
// flags count what cachestat counts, so the fallback that kernels without cachestat
// (Debian 12's 6.1) use proves the same: pages after a write, none after fsync.
func TestKpageflagsAgreesWithCachestat(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(make([]byte, 5*4096)); err != nil {
		t.Fatal(err)
	}
	byFlags, err := kpageflags(path)
	if errors.Is(err, ErrUnsupported) && os.Getenv("CI") != "true" {
		t.Skipf("%v: run as root", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	byStat, err := cachestat(path)
	if errors.Is(err, ErrUnsupported) {
		byStat = byFlags // this kernel has only the fallback: it is checked below alone
	} else if err != nil {
		t.Fatal(err)
	}
	if byFlags == 0 || byFlags != byStat {
		t.Errorf("after a write: kpageflags %d pages, cachestat %d; want the same, more than 0", byFlags, byStat)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if n, err := kpageflags(path); err != nil || n != 0 {
		t.Errorf("after fsync: kpageflags %d, %v; want 0", n, err)
	}
}
