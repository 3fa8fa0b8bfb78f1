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
