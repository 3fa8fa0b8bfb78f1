package state

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fill makes two runs with instances and logs at loc.
func fill(t *testing.T, loc string) {
	t.Helper()
	s := open(t, loc)
	for i := range 2 {
		r := &Run{Flow: "/f.hcl", Status: Succeeded, StartedAt: ts(i)}
		if err := s.CreateRun(r); err != nil {
			t.Fatal(err)
		}
		var ins []*Instance
		logs := map[string][]byte{}
		for j := range 1500 {
			a := fmt.Sprintf("task.t[%d]", j)
			ins = append(ins, &Instance{Address: a, Status: Succeeded, Order: j, StartedAt: tp(j % 60)})
			if j%100 == 0 {
				logs[a] = []byte(a + " said hello\n")
			}
		}
		if err := s.Commit(r.ID, nil, ins, logs); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
}

// TestMigrate copies a file to PostgreSQL and back: every run, record and log, the
// lineage kept; a non-empty destination is refused; the source is marked moved only
// after the copy verified and then refuses writers.
func TestMigrate(t *testing.T) {
	file := filepath.Join(t.TempDir(), "state.db")
	fill(t, file)
	before, _ := os.ReadFile(file)
	pg := pgState(t)

	taken := pgState(t)
	fill(t, taken)
	if _, err := Migrate(file, taken); !errors.Is(err, errNotEmpty) {
		t.Fatalf("migrate to a non-empty state: %v, want refused", err)
	}
	if after, _ := os.ReadFile(file); string(after) != string(before) {
		t.Error("a refused migration changed the source")
	}

	res, err := Migrate(file, pg)
	if err != nil {
		t.Fatal(err)
	}
	if res.Runs != 2 || res.Instances != 3000 || res.Logs != 30 {
		t.Errorf("copied %+v", res)
	}
	src, err := Open(file, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := verify(src, pg); err != nil {
		t.Error(err)
	}
	srcID, _ := src.Identity()
	src.Close()
	if srcID.MovedTo == "" || strings.Contains(srcID.MovedTo, "flowtest-secret") {
		t.Errorf("source identity %+v: want moved_to without the password", srcID)
	}
	if _, err := Open(file, Options{}); !errors.As(err, new(*MovedError)) {
		t.Errorf("writer of the moved source: %v, want *MovedError", err)
	}
	dst, err := Open(pg, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	dstID, _ := dst.Identity()
	dst.Close()
	if dstID.Lineage != srcID.Lineage || dstID.Lineage == "" || dstID.Origin != file {
		t.Errorf("copy identity %+v, source %+v", dstID, srcID)
	}

	// And back, to a new file.
	back := filepath.Join(t.TempDir(), "back.db")
	if _, err := Migrate(pg, back); err != nil {
		t.Fatal(err)
	}
	b, _ := Open(back, Options{ReadOnly: true})
	defer b.Close()
	backID, _ := b.Identity()
	if backID.Lineage != srcID.Lineage {
		t.Errorf("lineage %q after the round trip, want %q", backID.Lineage, srcID.Lineage)
	}
	p, _ := Open(pg, Options{ReadOnly: true})
	defer p.Close()
	if err := verify(p, back); err != nil {
		t.Error(err)
	}
	// A source held by a writer is not copied.
	held := pgState(t)
	fill(t, held)
	w := open(t, held)
	if _, err := Migrate(held, filepath.Join(t.TempDir(), "x.db")); !errors.As(err, new(*LockedError)) {
		t.Errorf("migrate of a held state: %v, want *LockedError", err)
	}
	w.Close()
}
