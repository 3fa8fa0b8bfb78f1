package state

import (
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/flowdev/flow/internal/pgtest"
)

// The contract tests (forEachBackend) run against both backends: a bbolt file and
// a state in a throwaway PostgreSQL cluster (internal/pgtest). What only a file
// can do (flock, pid file, FormatError on someone else's file) is tested on files
// alone; what only PostgreSQL does (advisory lock, fencing, reconnecting) in
// pg_test.go.

var (
	pgOnce sync.Once
	pgURL  string
	pgSeq  int
	pgMu   sync.Mutex
)

// pgState returns the URL of a new, empty state in the shared test database.
func pgState(t testing.TB) string {
	t.Helper()
	pgOnce.Do(func() { pgURL = pgtest.Database(t) })
	if pgURL == "" {
		t.Fatal("no test database")
	}
	pgMu.Lock()
	defer pgMu.Unlock()
	pgSeq++
	return fmt.Sprintf("%s&state=t%d", pgURL, pgSeq)
}

func forEachBackend(t *testing.T, fn func(t *testing.T, newLoc func() string)) {
	t.Run("bbolt", func(t *testing.T) {
		fn(t, func() string { return filepath.Join(t.TempDir(), "state.db") })
	})
	t.Run("postgres", func(t *testing.T) {
		fn(t, func() string { return pgState(t) })
	})
}

// shownAs is how errors name the state at loc (a URL without its password).
func shownAs(loc string) string {
	if !IsURL(loc) {
		return loc
	}
	l, err := parseLocation(loc)
	if err != nil {
		return loc
	}
	return l.display
}

// TestConcurrentCreateRun: runs created from many goroutines get distinct ids.
func TestConcurrentCreateRun(t *testing.T) { forEachBackend(t, testConcurrentCreateRun) }

func testConcurrentCreateRun(t *testing.T, newLoc func() string) {
	s := open(t, newLoc())
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := s.CreateRun(&Run{Flow: "f"}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	runs, err := s.Runs()
	if err != nil || len(runs) != 8 {
		t.Errorf("%d runs, %v; want 8", len(runs), err)
	}
}
