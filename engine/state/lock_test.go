package state

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/flowdev/flow/internal/pgtest"
)

// Environment of the helper process: when childPathEnv is set, the test
// binary opens that state file, reports the result as JSON on stdout and
// exits instead of running tests. flock locks belong to open file
// descriptions, so a real second process is the honest test of contention.
const (
	childPathEnv     = "FLOW_STATE_TEST_CHILD_PATH"
	childReadOnlyEnv = "FLOW_STATE_TEST_CHILD_READONLY"
)

// childResult is what the helper process reports.
type childResult struct {
	Opened  bool          `json:"opened"`
	Err     string        `json:"err,omitempty"`
	Locked  *LockedError  `json:"locked,omitempty"`
	Format  *FormatError  `json:"format,omitempty"`
	Elapsed time.Duration `json:"elapsed"`
}

func TestMain(m *testing.M) {
	if loc := os.Getenv(childHoldEnv); loc != "" {
		os.Exit(childHold(loc))
	}
	if path := os.Getenv(childPathEnv); path != "" {
		os.Exit(childOpen(path, os.Getenv(childReadOnlyEnv) == "1"))
	}
	code := m.Run()
	pgtest.Cleanup()
	os.Exit(code)
}

func childOpen(path string, readOnly bool) int {
	start := time.Now()
	s, err := Open(path, Options{ReadOnly: readOnly, LockTimeout: 200 * time.Millisecond})
	res := childResult{Elapsed: time.Since(start)}
	if err == nil {
		res.Opened = true
		if err := s.Close(); err != nil {
			res.Err = err.Error()
		}
	} else {
		res.Err = err.Error()
		errors.As(err, &res.Locked)
		errors.As(err, &res.Format)
	}
	if err := json.NewEncoder(os.Stdout).Encode(res); err != nil {
		return 2
	}
	return 0
}

// openInChild opens path in a new process and returns what happened.
func openInChild(t *testing.T, path string, readOnly bool) childResult {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	ro := "0"
	if readOnly {
		ro = "1"
	}
	cmd.Env = append(os.Environ(), childPathEnv+"="+path, childReadOnlyEnv+"="+ro)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("helper process: %v (output %q)", err, out)
	}
	var res childResult
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("helper output %q: %v", out, err)
	}
	return res
}

func TestLockContention(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	s := open(t, path)
	me := os.Getpid()

	for _, ro := range []bool{false, true} {
		t.Run(fmt.Sprintf("writer held/child readonly=%v", ro), func(t *testing.T) {
			res := openInChild(t, path, ro)
			if res.Opened || res.Locked == nil {
				t.Fatalf("child open: %+v, want LockedError", res)
			}
			if res.Locked.Path != path || res.Locked.PID != me {
				t.Errorf("LockedError = %+v, want path %q pid %d", res.Locked, path, me)
			}
			want := fmt.Sprintf("state file %q is in use by another flow process (pid %d)", path, me)
			if res.Err != want {
				t.Errorf("error = %q\nwant    %q", res.Err, want)
			}
			t.Logf("child gave up after %v", res.Elapsed)
			if res.Elapsed < 150*time.Millisecond || res.Elapsed > time.Second {
				t.Errorf("child gave up after %v, want about 200ms", res.Elapsed)
			}
		})
	}

	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(pidPath(path)); !os.IsNotExist(err) {
		t.Errorf("pid file left after Close: %v", err)
	}
	t.Run("released after Close", func(t *testing.T) {
		if res := openInChild(t, path, false); !res.Opened {
			t.Fatalf("child open after Close: %+v", res)
		}
	})

	t.Run("reader held", func(t *testing.T) {
		ro, err := Open(path, Options{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		defer ro.Close()
		// A stale pid file (a killed writer) must not be reported as the holder.
		if err := os.WriteFile(pidPath(path), []byte("999999999\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		defer os.Remove(pidPath(path))

		if res := openInChild(t, path, true); !res.Opened {
			t.Errorf("second reader: %+v, want success", res)
		}
		res := openInChild(t, path, false)
		if res.Locked == nil {
			t.Fatalf("writer while reader holds: %+v, want LockedError", res)
		}
		if res.Locked.PID != 0 {
			t.Errorf("LockedError.PID = %d, want 0 (unknown)", res.Locked.PID)
		}
		if want := fmt.Sprintf("state file %q is in use by another flow process", path); res.Err != want {
			t.Errorf("error = %q, want %q", res.Err, want)
		}
	})

	t.Run("stale pid file", func(t *testing.T) {
		// A pid file left by a killed process does not stop a writer.
		if err := os.WriteFile(pidPath(path), []byte("999999999\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		s, err := Open(path, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if b, _ := os.ReadFile(pidPath(path)); string(b) != fmt.Sprintf("%d\n", me) {
			t.Errorf("pid file = %q, want our pid", b)
		}
		s.Close()
	})
}

func TestLockedErrorMessage(t *testing.T) {
	tests := []struct {
		err  *LockedError
		want string
	}{
		{&LockedError{Path: ".flow/state.db", PID: 1234}, `state file ".flow/state.db" is in use by another flow process (pid 1234)`},
		{&LockedError{Path: ".flow/state.db"}, `state file ".flow/state.db" is in use by another flow process`},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
	}
	fe := &FormatError{Path: ".flow/x", Reason: "the file is empty"}
	if got, want := fe.Error(), `".flow/x" is not a flow state file: the file is empty; it was left untouched`; got != want {
		t.Errorf("FormatError.Error() = %q, want %q", got, want)
	}
}

// Within one process, two Stores of a file exclude each other just as two
// processes do (flock locks belong to open file descriptions).
func TestLockSameProcess(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	s := open(t, path)
	start := time.Now()
	_, err := Open(path, Options{LockTimeout: 100 * time.Millisecond})
	var le *LockedError
	if !errors.As(err, &le) || le.PID != os.Getpid() || le.Path != path {
		t.Fatalf("second Open: %v, want LockedError naming our pid", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("second Open took %v", d)
	}
	// The failed Open did not disturb the first Store or its pid file.
	if err := s.CreateRun(&Run{}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(pidPath(path)); err != nil {
		t.Errorf("pid file: %v", err)
	}
}

// TestLockReportsTheFileHolder: Lock of a state file says a writer holds it, and which
// process, while one does, and that none does once it closed.
func TestLockReportsTheFileHolder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	s := open(t, path)
	info, err := Lock(path)
	if err != nil {
		t.Fatal(err)
	}
	if !info.Held || info.Holder == nil || info.Holder.PID != os.Getpid() {
		t.Errorf("while held: %+v (holder %+v), want held by pid %d", info, info.Holder, os.Getpid())
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if info, err = Lock(path); err != nil || info.Held {
		t.Errorf("after Close: %+v, %v; want not held", info, err)
	}
}
