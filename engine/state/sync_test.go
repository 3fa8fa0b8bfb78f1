package state

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/flowdev/flow/internal/pagecache"
)

// Every write a Store reports done is on disk: creating the file, CreateRun,
// Commit, PutRun. pagecache sees what the kernel has not yet written back, so a
// store that left the fsync to the kernel (bbolt's NoSync) fails here.
func TestWritesAreSynced(t *testing.T) {
	dir := t.TempDir()
	if err := pagecache.Observable(dir); err != nil {
		// Without cachestat (Linux 6.5+) pagecache reads the pages' flags, which needs
		// root: a contributor on Debian 12's 6.1 runs this as root to see it. Under CI a
		// test that cannot see a sync fails rather than passes blind.
		if os.Getenv("CI") == "true" {
			t.Fatalf("cannot see whether a write was synced: %v", err)
		}
		t.Skipf("cannot see whether a write was synced: %v", err)
	}
	path := filepath.Join(dir, "state.db")
	check := func(what string) {
		t.Helper()
		if n, err := pagecache.Unsynced(path); err != nil || n != 0 {
			t.Errorf("after %s: %d pages of the state file are not synced (%v)", what, n, err)
		}
	}
	s := open(t, path)
	check("Open (creating the file)")
	r := &Run{Flow: "f", Status: Running}
	if err := s.CreateRun(r); err != nil {
		t.Fatal(err)
	}
	check("CreateRun")
	for i := range 5 {
		addr := fmt.Sprintf("task.t%d", i)
		in := &Instance{Address: addr, Status: Succeeded}
		// Logs of several pages each, so that every commit writes new data pages too.
		logs := map[string][]byte{addr: bytes.Repeat([]byte{byte('a' + i)}, 20000)}
		if err := s.Commit(r.ID, nil, []*Instance{in}, logs); err != nil {
			t.Fatal(err)
		}
		check(fmt.Sprintf("Commit %d", i+1))
	}
	r.Status = Succeeded
	if err := s.PutRun(r); err != nil {
		t.Fatal(err)
	}
	check("PutRun")
}
