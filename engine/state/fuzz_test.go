package state

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// FuzzOpen writes any bytes as a state file and opens it read-only and writable.
// Open either refuses with a *FormatError and leaves the file byte for byte as it
// was, or succeeds, every record can be read without a panic, and the writable
// Store commits a new run with a record and its log that read back the same, there
// and after reopening the file. The seed corpus
// (testdata/fuzz/FuzzOpen) holds an empty file, garbage and a truncated state; two
// fresh states (without and with a first run) are added here, as newImage makes
// them. Mutations of a whole state rarely get past bbolt's checksummed meta pages,
// which is what FuzzOpenPatched is for.
func FuzzOpen(f *testing.F) {
	for _, first := range []*Run{nil, {Flow: "f", Status: Running}} {
		image, _, err := newImage(first)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(image)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkOpen(t, data)
	})
}

// FuzzOpenPatched overwrites the bytes at offset (modulo the size) of a valid state
// of about 150 KiB with patch and checks what FuzzOpen checks. The meta pages are
// checksummed, so most damage lands where the state reader's own checks matter:
// branch and leaf pages, bucket headers and the JSON records.
func FuzzOpenPatched(f *testing.F) {
	base := filepath.Join(f.TempDir(), "base.db")
	makeState(f, base)
	valid := readFile(f, base)
	f.Fuzz(func(t *testing.T, offset uint32, patch []byte) {
		data := bytes.Clone(valid)
		copy(data[int(offset)%len(data):], patch)
		checkOpen(t, data)
	})
}

// checkOpen is the property both fuzz targets check.
func checkOpen(t *testing.T, data []byte) {
	path := filepath.Join(t.TempDir(), "state.db")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, readOnly := range []bool{true, false} {
		done := make(chan error, 1)
		go func() { done <- openAndReadAll(path, readOnly) }()
		var err error
		select {
		case err = <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("readOnly=%v: Open and reading did not finish within 10s", readOnly)
		}
		var fe *FormatError
		switch {
		case err == nil:
			if !readOnly {
				writeAndReadBack(t, path)
			}
		case errors.As(err, &fe):
			if !bytes.Equal(data, readFile(t, path)) {
				t.Fatalf("readOnly=%v: refused (%v) but the file was modified", readOnly, err)
			}
			if _, serr := os.Stat(pidPath(path)); serr == nil {
				t.Fatalf("readOnly=%v: refused (%v) but left a pid file", readOnly, err)
			}
		default:
			t.Fatalf("readOnly=%v: Open returned %T (%v), want nil or a *FormatError", readOnly, err, err)
		}
	}
}

// openAndReadAll opens path and reads every run, instance and log. A record that
// does not decode is an error of that call, not a failed Open, and is ignored.
func openAndReadAll(path string, readOnly bool) error {
	s, err := Open(path, Options{ReadOnly: readOnly, LockTimeout: 100 * time.Millisecond})
	if err != nil {
		return err
	}
	defer s.Close()
	runs, _ := s.Runs()
	_, _ = s.LatestRun()
	for _, r := range runs {
		instances, _ := s.Instances(r.ID)
		for _, in := range instances {
			_, _ = s.Logs(r.ID, in.Address)
		}
	}
	return nil
}

// writeAndReadBack opens the state at path, which Open accepted, writable: a new run
// with an instance record and its log must commit, and read back the same before and
// after the file is closed and opened again.
func writeAndReadBack(t *testing.T, path string) {
	t.Helper()
	in := &Instance{Address: `exec.fuzz["k"]`, Type: "exec", Status: Succeeded, Attempts: 1, Fingerprint: "f"}
	log := []byte("fuzz log\n")
	check := func(s *Store, id uint64, when string) {
		t.Helper()
		got, err := s.Instances(id)
		if err != nil || len(got) != 1 || got[0].Address != in.Address || got[0].Status != in.Status || got[0].Fingerprint != in.Fingerprint {
			t.Fatalf("%s: Instances(%d) = %+v, %v; want the committed record", when, id, got, err)
		}
		if l, err := s.Logs(id, in.Address); err != nil || !bytes.Equal(l, log) {
			t.Fatalf("%s: Logs = %q, %v; want %q", when, l, err, log)
		}
		if latest, err := s.LatestRun(); err != nil || latest == nil || latest.ID != id || latest.Flow != "fuzz" {
			t.Fatalf("%s: LatestRun = %+v, %v; want run %d", when, latest, err, id)
		}
	}
	s, err := Open(path, Options{LockTimeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatalf("Open accepted the file, then refused it: %v", err)
	}
	r := &Run{Flow: "fuzz", Status: Running}
	if err := s.CreateRun(r); err != nil {
		s.Close()
		t.Fatalf("Open accepted the file, but CreateRun failed: %v", err)
	}
	if err := s.Commit(r.ID, nil, []*Instance{in}, map[string][]byte{in.Address: log}); err != nil {
		s.Close()
		t.Fatalf("Open accepted the file, but Commit failed: %v", err)
	}
	check(s, r.ID, "after Commit")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = Open(path, Options{ReadOnly: true, LockTimeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatalf("after Commit, Open refuses the file: %v", err)
	}
	defer s.Close()
	check(s, r.ID, "reopened")
}
