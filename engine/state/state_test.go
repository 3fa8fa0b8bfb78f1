package state

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zclconf/go-cty/cty"
	bolt "go.etcd.io/bbolt"
)

// open opens path writable and closes it at the end of the test.
func open(t testing.TB, path string) *Store {
	t.Helper()
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatalf("Open(%q): %v", path, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func mustEncode(t testing.TB, v cty.Value) Value {
	t.Helper()
	ev, err := EncodeValue(v)
	if err != nil {
		t.Fatalf("EncodeValue(%#v): %v", v, err)
	}
	return ev
}

func ts(sec int) time.Time { return time.Date(2025, 3, 1, 12, 0, sec, 123456789, time.UTC) }
func tp(sec int) *time.Time {
	t := ts(sec)
	return &t
}

var testValues = map[string]cty.Value{
	"string": cty.StringVal("héllo\nworld"),
	"int":    cty.NumberIntVal(42),
	"float":  cty.NumberFloatVal(3.14),
	"big":    cty.MustParseNumberVal("123456789012345678901234567890.125"),
	"bool":   cty.True,
	"null":   cty.NullVal(cty.String),
	"list":   cty.ListVal([]cty.Value{cty.StringVal("a"), cty.StringVal("b")}),
	"empty":  cty.ListValEmpty(cty.Number),
	"set":    cty.SetVal([]cty.Value{cty.NumberIntVal(1), cty.NumberIntVal(2)}),
	"map":    cty.MapVal(map[string]cty.Value{"x": cty.NumberIntVal(1), "y": cty.NumberIntVal(2)}),
	"tuple":  cty.TupleVal([]cty.Value{cty.StringVal("a"), cty.NumberIntVal(1)}),
	"object": cty.ObjectVal(map[string]cty.Value{
		"name": cty.StringVal("n"),
		"tags": cty.MapVal(map[string]cty.Value{"k": cty.StringVal("v")}),
		"nums": cty.ListVal([]cty.Value{cty.NumberIntVal(1)}),
	}),
	"dynamic-null": cty.NullVal(cty.DynamicPseudoType),
}

func TestValueRoundTrip(t *testing.T) {
	for name, v := range testValues {
		t.Run(name, func(t *testing.T) {
			ev := mustEncode(t, v)
			// Through JSON, as it is stored.
			data, err := json.Marshal(ev)
			if err != nil {
				t.Fatal(err)
			}
			var back Value
			if err := json.Unmarshal(data, &back); err != nil {
				t.Fatal(err)
			}
			got, err := back.Decode()
			if err != nil {
				t.Fatal(err)
			}
			if !got.Type().Equals(v.Type()) || !got.RawEquals(v) {
				t.Errorf("decoded %#v, want %#v", got, v)
			}
		})
	}
}

func TestEncodeValueRejects(t *testing.T) {
	tests := map[string]cty.Value{
		"nil":             cty.NilVal,
		"unknown":         cty.UnknownVal(cty.String),
		"partly unknown":  cty.ListVal([]cty.Value{cty.StringVal("a"), cty.UnknownVal(cty.String)}),
		"marked":          cty.StringVal("secret").Mark("sensitive"),
		"nested marked":   cty.ObjectVal(map[string]cty.Value{"p": cty.StringVal("secret").Mark("sensitive")}),
		"dynamic unknown": cty.DynamicVal,
	}
	for name, v := range tests {
		t.Run(name, func(t *testing.T) {
			if ev, err := EncodeValue(v); err == nil {
				t.Errorf("EncodeValue succeeded: %s %s", ev.Type, ev.Value)
			}
		})
	}
}

func TestDecodeInvalid(t *testing.T) {
	tests := map[string]Value{
		"zero":         {},
		"no value":     {Type: json.RawMessage(`"string"`)},
		"bad type":     {Type: json.RawMessage(`"strang"`), Value: json.RawMessage(`"x"`)},
		"wrong kind":   {Type: json.RawMessage(`"number"`), Value: json.RawMessage(`{"a":1}`)},
		"invalid json": {Type: json.RawMessage(`"string"`), Value: json.RawMessage(`"x`)},
	}
	for name, v := range tests {
		t.Run(name, func(t *testing.T) {
			if got, err := v.Decode(); err == nil {
				t.Errorf("Decode succeeded: %#v", got)
			}
		})
	}
}

func TestDefaultPath(t *testing.T) {
	t.Setenv("FLOW_STATE", "")
	if got, want := DefaultPath(), filepath.Join(".flow", "state.db"); got != want {
		t.Errorf("DefaultPath() = %q, want %q", got, want)
	}
	t.Setenv("FLOW_STATE", "/tmp/x.db")
	if got := DefaultPath(); got != "/tmp/x.db" {
		t.Errorf("DefaultPath() = %q with FLOW_STATE set", got)
	}
}

func TestRoundTrip(t *testing.T) { forEachBackend(t, testRoundTrip) }

func testRoundTrip(t *testing.T, newLoc func() string) {
	path := newLoc()
	s := open(t, path)
	if s.Path() != path {
		t.Errorf("Path() = %q", s.Path())
	}

	run := &Run{
		Flow:      "flows/build.hcl",
		FlowHash:  "sha256:abc",
		Vars:      map[string]Value{"region": mustEncode(t, cty.StringVal("eu")), "n": mustEncode(t, cty.NumberIntVal(3))},
		Sensitive: []string{"token"},
		Status:    Running,
		StartedAt: ts(0),
		PID:       os.Getpid(),
	}
	if err := s.CreateRun(run); err != nil {
		t.Fatal(err)
	}
	if run.ID != 1 {
		t.Fatalf("first run got id %d, want 1", run.ID)
	}

	outputs := map[string]Value{}
	for name, v := range testValues {
		outputs[name] = mustEncode(t, v)
	}
	instances := []*Instance{
		{
			Address: "task.build", Type: "exec", Status: Succeeded, Attempts: 2,
			StartedAt: tp(1), FinishedAt: tp(2), Reason: "inputs changed",
			Outputs: outputs, Fingerprint: "fp1", AttrHashes: map[string]string{"command": "h1", "env": "h2"},
		},
		{Address: "task.deploy[\"eu\"]", Type: "http", Status: Failed, Attempts: 1, StartedAt: tp(3), FinishedAt: tp(4), Error: "boom"},
		{Address: "task.secret", Type: "exec", Status: Succeeded, Attempts: 1, Redacted: true},
		{Address: "task.a", Type: "exec", Status: Skipped, Reason: "condition false"},
	}
	logs := map[string][]byte{
		"task.build":          []byte("line 1\nline 2\n"),
		"task.deploy[\"eu\"]": {0, 1, 2, 0xff},
	}
	if err := s.Commit(run.ID, nil, instances, logs); err != nil {
		t.Fatal(err)
	}
	run.Status = Succeeded
	run.FinishedAt = tp(5)
	run.Resumes = 1
	run.Outputs = map[string]Value{"url": mustEncode(t, cty.StringVal("https://x"))}
	run.Error = ""
	if err := s.Commit(run.ID, run, nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}

	for _, ro := range []bool{false, true} {
		t.Run(fmt.Sprintf("readonly=%v", ro), func(t *testing.T) {
			s, err := Open(path, Options{ReadOnly: ro})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()

			got, err := s.GetRun(run.ID)
			if err != nil {
				t.Fatal(err)
			}
			checkRun(t, got, run)

			gotInst, err := s.Instances(run.ID)
			if err != nil {
				t.Fatal(err)
			}
			want := []*Instance{instances[3], instances[0], instances[1], instances[2]} // sorted by address
			if len(gotInst) != len(want) {
				t.Fatalf("got %d instances, want %d", len(gotInst), len(want))
			}
			for i := range want {
				checkInstance(t, gotInst[i], want[i])
			}

			for addr, wantLog := range logs {
				gotLog, err := s.Logs(run.ID, addr)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(gotLog, wantLog) {
					t.Errorf("Logs(%q) = %q, want %q", addr, gotLog, wantLog)
				}
			}
			if got, err := s.Logs(run.ID, "task.a"); got != nil || err != nil {
				t.Errorf("Logs of instance without log = %q, %v; want nil, nil", got, err)
			}
		})
	}
}

// checkRun compares runs, decoding Values.
func checkRun(t *testing.T, got, want *Run) {
	t.Helper()
	if got.ID != want.ID || got.Flow != want.Flow || got.FlowHash != want.FlowHash || got.Status != want.Status ||
		!got.StartedAt.Equal(want.StartedAt) || !timeEq(got.FinishedAt, want.FinishedAt) ||
		got.Resumes != want.Resumes || got.PID != want.PID || got.Error != want.Error ||
		strings.Join(got.Sensitive, ",") != strings.Join(want.Sensitive, ",") {
		t.Errorf("run = %+v\nwant %+v", got, want)
	}
	checkValuesEq(t, "vars", got.Vars, want.Vars)
	checkValuesEq(t, "outputs", got.Outputs, want.Outputs)
}

func checkInstance(t *testing.T, got, want *Instance) {
	t.Helper()
	if got.Address != want.Address || got.Type != want.Type || got.Status != want.Status ||
		got.Attempts != want.Attempts || !timeEq(got.StartedAt, want.StartedAt) || !timeEq(got.FinishedAt, want.FinishedAt) ||
		got.Error != want.Error || got.Reason != want.Reason || got.Fingerprint != want.Fingerprint ||
		got.Redacted != want.Redacted || fmt.Sprint(got.AttrHashes) != fmt.Sprint(want.AttrHashes) {
		t.Errorf("instance = %+v\nwant %+v", got, want)
	}
	checkValuesEq(t, want.Address+" outputs", got.Outputs, want.Outputs)
}

func checkValuesEq(t *testing.T, what string, got, want map[string]Value) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: got %d values, want %d", what, len(got), len(want))
	}
	for name, wv := range want {
		gv, ok := got[name]
		if !ok {
			t.Errorf("%s: %q missing", what, name)
			continue
		}
		g, err := gv.Decode()
		if err != nil {
			t.Errorf("%s: %q: %v", what, name, err)
			continue
		}
		w, err := wv.Decode()
		if err != nil {
			t.Fatal(err)
		}
		if !g.Type().Equals(w.Type()) || !g.RawEquals(w) {
			t.Errorf("%s: %q = %#v, want %#v", what, name, g, w)
		}
	}
}

func timeEq(a, b *time.Time) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Equal(*b)
}

func TestRunsOrdering(t *testing.T) { forEachBackend(t, testRunsOrdering) }

func testRunsOrdering(t *testing.T, newLoc func() string) {
	path := newLoc()
	s := open(t, path)

	if r, err := s.LatestRun(); r != nil || err != nil {
		t.Fatalf("LatestRun on empty state = %v, %v; want nil, nil", r, err)
	}
	if runs, err := s.Runs(); len(runs) != 0 || err != nil {
		t.Fatalf("Runs on empty state = %v, %v", runs, err)
	}
	for i := 1; i <= 3; i++ {
		r := &Run{Flow: fmt.Sprintf("f%d.hcl", i), Status: Running, StartedAt: ts(i)}
		if err := s.CreateRun(r); err != nil {
			t.Fatal(err)
		}
		if r.ID != uint64(i) {
			t.Fatalf("run %d got id %d", i, r.ID)
		}
	}
	s.Close()

	s = open(t, path)
	r := &Run{Flow: "f4.hcl", StartedAt: ts(4)}
	if err := s.CreateRun(r); err != nil {
		t.Fatal(err)
	}
	if r.ID != 4 {
		t.Fatalf("run after reopen got id %d, want 4", r.ID)
	}
	// Updating an older run does not make it the latest.
	old, err := s.GetRun(2)
	if err != nil {
		t.Fatal(err)
	}
	old.Status = Interrupted
	if err := s.PutRun(old); err != nil {
		t.Fatal(err)
	}
	s.Close()

	s = open(t, path)
	latest, err := s.LatestRun()
	if err != nil || latest == nil || latest.ID != 4 || latest.Flow != "f4.hcl" {
		t.Fatalf("LatestRun = %+v, %v; want run 4", latest, err)
	}
	runs, err := s.Runs()
	if err != nil {
		t.Fatal(err)
	}
	var ids []uint64
	for _, r := range runs {
		ids = append(ids, r.ID)
	}
	if fmt.Sprint(ids) != "[1 2 3 4]" {
		t.Errorf("Runs ids = %v, want [1 2 3 4]", ids)
	}
	if runs[1].Status != Interrupted {
		t.Errorf("run 2 status = %q after PutRun", runs[1].Status)
	}

	_, err = s.GetRun(99)
	if !errors.Is(err, ErrNotFound) {
		t.Errorf("GetRun(99) error = %v, want ErrNotFound", err)
	}
	if err != nil && !strings.Contains(err.Error(), shownAs(path)) {
		t.Errorf("error %q does not name the file", err)
	}
	if err := s.PutRun(&Run{ID: 99}); !errors.Is(err, ErrNotFound) {
		t.Errorf("PutRun(99) error = %v, want ErrNotFound", err)
	}
	if _, err := s.Instances(99); !errors.Is(err, ErrNotFound) {
		t.Errorf("Instances(99) error = %v, want ErrNotFound", err)
	}
	if _, err := s.Logs(99, "x"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Logs(99) error = %v, want ErrNotFound", err)
	}
	if err := s.Commit(99, nil, []*Instance{{Address: "a"}}, nil); !errors.Is(err, ErrNotFound) {
		t.Errorf("Commit(99) error = %v, want ErrNotFound", err)
	}
}

func TestNewFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "b")
	path := filepath.Join(dir, "state.db")
	s := open(t, path)

	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if perm := fi.Mode().Perm(); perm != 0o600 {
		t.Errorf("state file mode = %v, want 0600", perm)
	}
	di, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if perm := di.Mode().Perm(); perm&^0o700 != 0 {
		t.Errorf("created directory mode = %v, want at most 0700", perm)
	}
	pid, err := os.ReadFile(pidPath(path))
	if err != nil || strings.TrimSpace(string(pid)) != fmt.Sprint(os.Getpid()) {
		t.Errorf("pid file = %q, %v; want our pid", pid, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// Only the state file remains: no pid file, no temporary file.
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Name() != "state.db" {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("directory holds %v, want only state.db", names)
	}

	// The new file is a bbolt database with the schema version.
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.View(func(tx *bolt.Tx) error {
		if v := tx.Bucket([]byte("meta")).Get([]byte("schema_version")); string(v) != "1" {
			t.Errorf("schema_version = %q, want 1", v)
		}
		return nil
	})
}

// TestFirstRun: a new file is created with Options.FirstRun as run 1 and latest; an
// existing file leaves FirstRun alone for CreateRun; an invalid one creates nothing.
func TestFirstRun(t *testing.T) { forEachBackend(t, testFirstRun) }

func testFirstRun(t *testing.T, newLoc func() string) {
	path := newLoc()
	first := &Run{Flow: "/f.hcl", Status: Running, StartedAt: ts(1)}
	s, err := Open(path, Options{FirstRun: first})
	if err != nil {
		t.Fatal(err)
	}
	if first.ID != 1 {
		t.Errorf("FirstRun.ID = %d, want 1", first.ID)
	}
	latest, err := s.LatestRun()
	if err != nil || latest == nil || latest.ID != 1 || latest.Flow != "/f.hcl" {
		t.Fatalf("LatestRun = %+v, %v; want run 1 of /f.hcl", latest, err)
	}
	if err := s.Commit(1, nil, []*Instance{{Address: "a", Status: Succeeded}}, nil); err != nil {
		t.Fatalf("commit to the first run: %v", err)
	}
	s.Close()

	again := &Run{Flow: "/g.hcl", Status: Running, StartedAt: ts(2)}
	s, err = Open(path, Options{FirstRun: again})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if again.ID != 0 {
		t.Errorf("FirstRun.ID of an existing file = %d, want 0", again.ID)
	}
	if runs, _ := s.Runs(); len(runs) != 1 {
		t.Errorf("an existing file has %d runs after Open, want 1", len(runs))
	}

	bad := newLoc()
	if _, err := Open(bad, Options{FirstRun: &Run{Vars: map[string]Value{"x": {}}}}); err == nil {
		t.Error("Open with an invalid first run succeeded")
	}
	if ok, err := Exists(bad); ok || err != nil {
		t.Errorf("an invalid first run left a state: %v, %v", ok, err)
	}
}

// TestNewFileWithoutMemfd: where memfd_create is not allowed, the new file is built in
// an unnamed temporary file instead, with the same result.
func TestNewFileWithoutMemfd(t *testing.T) {
	defer func(f func() (*os.File, error)) { newScratch = f }(newScratch)
	newScratch = tempScratch
	path := filepath.Join(t.TempDir(), "state.db")
	first := &Run{Flow: "/f.hcl", Status: Running, StartedAt: ts(1)}
	s, err := Open(path, Options{FirstRun: first})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if latest, err := s.LatestRun(); err != nil || latest == nil || latest.ID != 1 || first.ID != 1 {
		t.Fatalf("LatestRun = %+v, %v; FirstRun.ID = %d", latest, err, first.ID)
	}
}

func TestReadOnly(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "sub", "state.db")
	if _, err := Open(missing, Options{ReadOnly: true}); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("read-only Open of missing file: %v, want ErrNotExist", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "sub")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("read-only Open created the directory")
	}

	path := filepath.Join(dir, "state.db")
	s := open(t, path)
	r := &Run{Flow: "f"}
	if err := s.CreateRun(r); err != nil {
		t.Fatal(err)
	}
	s.Close()
	before := readFile(t, path)

	ro, err := Open(path, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	// Several readers may share the file.
	ro2, err := Open(path, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	ro2.Close()
	if _, err := os.Stat(pidPath(path)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("read-only Open wrote a pid file")
	}
	if err := ro.CreateRun(&Run{}); err == nil {
		t.Error("CreateRun on read-only store succeeded")
	}
	if err := ro.Commit(r.ID, nil, []*Instance{{Address: "a"}}, nil); err == nil {
		t.Error("Commit on read-only store succeeded")
	}
	if err := ro.Close(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, readFile(t, path)) {
		t.Error("read-only use modified the file")
	}
}

func readFile(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// makeState creates a state with a run and enough data (over 100 KiB) that
// its file has grown beyond bbolt's initial size.
func makeState(t testing.TB, path string) {
	t.Helper()
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r := &Run{Flow: "f"}
	if err := s.CreateRun(r); err != nil {
		t.Fatal(err)
	}
	logs := map[string][]byte{}
	var instances []*Instance
	for i := range 50 {
		addr := fmt.Sprintf("task.t%02d", i)
		instances = append(instances, &Instance{Address: addr, Status: Succeeded, Outputs: map[string]Value{"i": mustEncode(t, cty.NumberIntVal(int64(i)))}})
		logs[addr] = bytes.Repeat([]byte{byte('a' + i%26)}, 3000)
	}
	if err := s.Commit(r.ID, nil, instances, logs); err != nil {
		t.Fatal(err)
	}
}

func TestFormatErrors(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	garbage := make([]byte, 64<<10)
	for i := range garbage {
		garbage[i] = byte(rng.Uint32())
	}

	tests := []struct {
		name   string
		make   func(t *testing.T, path string)
		reason string // part of FormatError.Reason
	}{
		{"empty", func(t *testing.T, path string) { writeFile(t, path, nil) }, "empty"},
		{"garbage", func(t *testing.T, path string) { writeFile(t, path, garbage) }, "not a bbolt database"},
		{"short garbage", func(t *testing.T, path string) { writeFile(t, path, []byte("hello, world\n")) }, "not a bbolt database"},
		{"directory", func(t *testing.T, path string) {
			if err := os.Mkdir(path, 0o700); err != nil {
				t.Fatal(err)
			}
		}, "not a regular file"},
		{"truncated", func(t *testing.T, path string) {
			makeState(t, path)
			b := readFile(t, path)
			used := len(bytes.TrimRight(b, "\x00")) // a new file is sized ahead, its tail unused
			writeFile(t, path, b[:used/2])
		}, "truncated"},
		{"foreign bbolt", func(t *testing.T, path string) {
			db, err := bolt.Open(path, 0o600, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			err = db.Update(func(tx *bolt.Tx) error {
				b, err := tx.CreateBucket([]byte("other"))
				if err != nil {
					return err
				}
				return b.Put([]byte("k"), []byte("v"))
			})
			if err != nil {
				t.Fatal(err)
			}
		}, `no "meta" bucket`},
		{"newer schema", func(t *testing.T, path string) { setSchema(t, path, "99") }, "newer"},
		{"bad schema", func(t *testing.T, path string) { setSchema(t, path, "one") }, "invalid schema"},
		{"corrupt page", func(t *testing.T, path string) {
			makeState(t, path)
			b := readFile(t, path)
			// Overwrite everything after the two meta pages with garbage:
			// the meta pages are valid, every page they lead to is not.
			copy(b[2*4096:], garbage)
			writeFile(t, path, b)
		}, ""},
	}
	for _, tt := range tests {
		for _, ro := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/readonly=%v", tt.name, ro), func(t *testing.T) {
				dir := t.TempDir()
				path := filepath.Join(dir, "state.db")
				tt.make(t, path)
				before := snapshot(t, dir)

				s, err := Open(path, Options{ReadOnly: ro, LockTimeout: 200 * time.Millisecond})
				if err == nil {
					s.Close()
					t.Fatal("Open succeeded")
				}
				t.Logf("Open: %v", err)
				var fe *FormatError
				if !errors.As(err, &fe) {
					t.Fatalf("Open error = %v (%T), want *FormatError", err, err)
				}
				if fe.Path != path || !strings.Contains(fe.Reason, tt.reason) {
					t.Errorf("FormatError = %+v, want path %q and reason containing %q", fe, path, tt.reason)
				}
				if !strings.Contains(err.Error(), shownAs(path)) || !strings.Contains(err.Error(), "left untouched") {
					t.Errorf("error message %q", err)
				}
				if after := snapshot(t, dir); after != before {
					t.Errorf("directory changed:\nbefore %s\nafter  %s", before, after)
				}
				// The file is not left locked.
				if !ro && tt.name != "directory" {
					f, err := os.OpenFile(path, os.O_RDWR, 0)
					if err != nil {
						t.Fatal(err)
					}
					f.Close()
				}
			})
		}
	}
}

// snapshot describes every entry of dir, with file contents hashed by
// value, so any change (including new pid or temporary files) shows.
func snapshot(t *testing.T, dir string) string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var sb strings.Builder
	for _, e := range entries {
		info, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&sb, "%s %v %d ", e.Name(), info.Mode(), info.Size())
		if info.Mode().IsRegular() {
			fmt.Fprintf(&sb, "%x ", readFile(t, filepath.Join(dir, e.Name())))
		}
	}
	return sb.String()
}

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// setSchema makes a valid state at path and sets its schema version.
func setSchema(t *testing.T, path, version string) {
	t.Helper()
	s := open(t, path)
	s.Close()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket([]byte("meta")).Put([]byte("schema_version"), []byte(version))
	}); err != nil {
		t.Fatal(err)
	}
}

func TestCommitAtomicity(t *testing.T) { forEachBackend(t, testCommitAtomicity) }

func testCommitAtomicity(t *testing.T, newLoc func() string) {
	path := newLoc()
	s := open(t, path)
	run := &Run{Flow: "f", Status: Running}
	if err := s.CreateRun(run); err != nil {
		t.Fatal(err)
	}
	good := []*Instance{
		{Address: "task.a", Status: Succeeded, Outputs: map[string]Value{"x": mustEncode(t, cty.StringVal("a"))}},
		{Address: "task.b", Status: Succeeded},
	}
	if err := s.Commit(run.ID, nil, good, map[string][]byte{"task.a": []byte("log a")}); err != nil {
		t.Fatal(err)
	}

	bad := &Run{ID: run.ID, Flow: "f", Status: Failed}
	tests := []struct {
		name      string
		run       *Run
		instances []*Instance
		logs      map[string][]byte
	}{
		{"invalid output json", bad, []*Instance{
			{Address: "task.a", Status: Failed},
			{Address: "task.c", Outputs: map[string]Value{"x": {Type: json.RawMessage(`"string"`), Value: json.RawMessage(`{"unterminated`)}}},
		}, map[string][]byte{"task.a": []byte("new log")}},
		{"zero output value", bad, []*Instance{{Address: "task.a", Status: Failed}, {Address: "task.c", Outputs: map[string]Value{"x": {}}}}, nil},
		{"invalid run var", &Run{ID: run.ID, Vars: map[string]Value{"v": {Type: json.RawMessage(`"string"`), Value: json.RawMessage(`nope`)}}},
			[]*Instance{{Address: "task.a", Status: Failed}}, nil},
		{"empty address", bad, []*Instance{{Address: "task.a", Status: Failed}, {Address: ""}}, nil},
		{"nil instance", bad, []*Instance{{Address: "task.a", Status: Failed}, nil}, nil},
		{"empty log address", bad, []*Instance{{Address: "task.a", Status: Failed}}, map[string][]byte{"": []byte("x")}},
		{"run id mismatch", &Run{ID: run.ID + 1}, []*Instance{{Address: "task.a", Status: Failed}}, nil},
		// Fails inside the transaction, after task.a was written: rolled back.
		{"key too large", bad, []*Instance{{Address: "task.a", Status: Failed}, {Address: strings.Repeat("x", 40000)}},
			map[string][]byte{"task.a": []byte("new log")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := s.Commit(run.ID, tt.run, tt.instances, tt.logs)
			if err == nil {
				t.Fatal("Commit succeeded")
			}
			if !strings.Contains(err.Error(), shownAs(path)) {
				t.Errorf("error %q does not name the file", err)
			}
			checkIntact(t, s, run.ID)
		})
	}

	// After Close, Commit fails with ErrClosed and nothing changes on disk.
	s.Close()
	if err := s.Commit(run.ID, bad, []*Instance{{Address: "task.a", Status: Failed}}, nil); !errors.Is(err, ErrClosed) {
		t.Errorf("Commit after Close: %v, want ErrClosed", err)
	}
	if _, err := s.GetRun(run.ID); !errors.Is(err, ErrClosed) {
		t.Errorf("GetRun after Close: %v, want ErrClosed", err)
	}
	s = open(t, path)
	checkIntact(t, s, run.ID)

	var zero Store
	if err := zero.Commit(1, nil, nil, nil); !errors.Is(err, ErrClosed) {
		t.Errorf("zero Store Commit: %v, want ErrClosed", err)
	}
	if err := zero.Close(); err != nil {
		t.Errorf("zero Store Close: %v", err)
	}
}

// checkIntact checks the state TestCommitAtomicity committed successfully.
func checkIntact(t *testing.T, s *Store, id uint64) {
	t.Helper()
	r, err := s.GetRun(id)
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != Running || len(r.Vars) != 0 {
		t.Errorf("run changed: %+v", r)
	}
	in, err := s.Instances(id)
	if err != nil {
		t.Fatal(err)
	}
	if len(in) != 2 || in[0].Address != "task.a" || in[0].Status != Succeeded || in[1].Address != "task.b" {
		t.Errorf("instances changed: %d records, first %+v", len(in), in[0])
	}
	if log, err := s.Logs(id, "task.a"); err != nil || string(log) != "log a" {
		t.Errorf("log changed: %q, %v", log, err)
	}
}

func TestLogs(t *testing.T) { forEachBackend(t, testLogs) }

func testLogs(t *testing.T, newLoc func() string) {
	path := newLoc()
	s := open(t, path)
	r := &Run{}
	if err := s.CreateRun(r); err != nil {
		t.Fatal(err)
	}
	big := make([]byte, MaxLogSize+MaxLogSize/2)
	for i := range big {
		big[i] = byte(i % 251)
	}
	if err := s.Commit(r.ID, nil, nil, map[string][]byte{"a": big, "b": []byte("b1")}); err != nil {
		t.Fatal(err)
	}
	got, err := s.Logs(r.ID, "a")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, big[len(big)-MaxLogSize:]) {
		t.Errorf("capped log: got %d bytes, want the last %d", len(got), MaxLogSize)
	}
	// Replace and delete.
	if err := s.Commit(r.ID, nil, nil, map[string][]byte{"a": nil, "b": []byte("b2")}); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Logs(r.ID, "a"); got != nil || err != nil {
		t.Errorf("deleted log = %d bytes, %v", len(got), err)
	}
	if got, err := s.Logs(r.ID, "b"); string(got) != "b2" || err != nil {
		t.Errorf("replaced log = %q, %v", got, err)
	}
	// Logs of one run are not visible in another.
	r2 := &Run{}
	if err := s.CreateRun(r2); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Logs(r2.ID, "b"); got != nil || err != nil {
		t.Errorf("log of other run = %q, %v", got, err)
	}
}

func TestConcurrentUse(t *testing.T) { forEachBackend(t, testConcurrentUse) }

func testConcurrentUse(t *testing.T, newLoc func() string) {
	path := newLoc()
	s := open(t, path)
	r := &Run{}
	if err := s.CreateRun(r); err != nil {
		t.Fatal(err)
	}
	const workers, batches = 4, 10
	var wg sync.WaitGroup
	errs := make(chan error, workers*batches*2)
	for w := range workers {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for b := range batches {
				addr := fmt.Sprintf("task.w%d_%d", w, b)
				if err := s.Commit(r.ID, nil, []*Instance{{Address: addr, Status: Succeeded}}, map[string][]byte{addr: []byte(addr)}); err != nil {
					errs <- err
				}
			}
		}()
		go func() {
			defer wg.Done()
			for range batches {
				if _, err := s.Instances(r.ID); err != nil {
					errs <- err
				}
				if _, err := s.LatestRun(); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	in, err := s.Instances(r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(in) != workers*batches {
		t.Errorf("got %d instances, want %d", len(in), workers*batches)
	}
}

// TestCorruptPages damages each page of a valid state in turn, in ways that
// make bbolt index out of range or read unmapped memory. Open must never
// crash: it either succeeds (the page was not in use) or returns a
// *FormatError, and it never modifies the file.
func TestCorruptPages(t *testing.T) {
	dir := t.TempDir()
	orig := filepath.Join(dir, "orig.db")
	makeState(t, orig)
	valid := readFile(t, orig)
	pageSize := os.Getpagesize()

	corruptions := map[string]func(page []byte){
		"leaf with wild elements": func(p []byte) {
			binary.LittleEndian.PutUint16(p[8:], 0x02)    // leaf
			binary.LittleEndian.PutUint16(p[10:], 0xffff) // count
			binary.LittleEndian.PutUint32(p[12:], 0)      // overflow
			for i := 16; i < len(p); i++ {
				p[i] = 0xff
			}
		},
		"branch to wild pages": func(p []byte) {
			binary.LittleEndian.PutUint16(p[8:], 0x01) // branch
			binary.LittleEndian.PutUint16(p[10:], 4)
			binary.LittleEndian.PutUint32(p[12:], 0)
			for i := 16; i+16 <= len(p); i += 16 {
				binary.LittleEndian.PutUint32(p[i:], uint32(len(p)-i-1)) // pos: a 1-byte key at the very end
				binary.LittleEndian.PutUint32(p[i+4:], 1)                // ksize
				binary.LittleEndian.PutUint64(p[i+8:], 1<<40)            // pgid far beyond the file
			}
		},
		"branch with wild keys": func(p []byte) {
			if binary.LittleEndian.Uint16(p[8:]) != 0x01 {
				return
			}
			for i := 16; i+16 <= len(p); i += 16 {
				binary.LittleEndian.PutUint32(p[i:], 1<<30) // pos
			}
		},
		"leaf keys out of order": func(p []byte) {
			if binary.LittleEndian.Uint16(p[8:]) != 0x02 || binary.LittleEndian.Uint16(p[10:]) < 2 {
				return
			}
			pos, ksize := binary.LittleEndian.Uint32(p[20:]), binary.LittleEndian.Uint32(p[24:])
			if ksize > 0 && 16+int(pos) < len(p) {
				p[16+pos] = 0xff // the first key now sorts last
			}
		},
		"leaf value beyond file": func(p []byte) {
			binary.LittleEndian.PutUint16(p[8:], 0x02)
			binary.LittleEndian.PutUint16(p[10:], 1)
			binary.LittleEndian.PutUint32(p[12:], 0)
			binary.LittleEndian.PutUint32(p[16:], 0)             // flags: plain value
			binary.LittleEndian.PutUint32(p[20:], 16)            // pos
			binary.LittleEndian.PutUint32(p[24:], 1)             // ksize
			binary.LittleEndian.PutUint32(p[28:], uint32(4<<20)) // vsize: past the end of the mapping
		},
	}
	for _, name := range slices.Sorted(maps.Keys(corruptions)) {
		corrupt := corruptions[name]
		var failed, opened int
		var reasons []string
		for pg := 2; (pg+1)*pageSize <= len(valid); pg++ {
			b := bytes.Clone(valid)
			corrupt(b[pg*pageSize : (pg+1)*pageSize])
			if bytes.Equal(b, valid) {
				continue // this corruption does not apply to this page
			}
			path := filepath.Join(dir, "state.db")
			writeFile(t, path, b)
			for _, ro := range []bool{true, false} {
				s, err := Open(path, Options{ReadOnly: ro, LockTimeout: 100 * time.Millisecond})
				var fe *FormatError
				switch {
				case err == nil:
					opened++
					if _, err := s.Instances(1); err != nil {
						t.Errorf("%s, page %d: opened but Instances: %v", name, pg, err)
					}
					s.Close()
				case errors.As(err, &fe):
					failed++
					reasons = append(reasons, fe.Reason)
				default:
					// A LockedError here means a failed Open left the file locked.
					t.Fatalf("%s, page %d, readonly=%v: %v", name, pg, ro, err)
				}
				if err != nil && !bytes.Equal(b, readFile(t, path)) {
					t.Fatalf("%s, page %d: failed Open modified the file", name, pg)
				}
			}
		}
		t.Logf("%s: %d opens failed with FormatError, %d succeeded (page not in use); e.g. %q", name, failed, opened, reasons[:min(1, len(reasons))])
		if failed == 0 {
			t.Errorf("%s: no corruption was detected", name)
		}
	}
}
