package state

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/jackc/pgx/v5"
	bolt "go.etcd.io/bbolt"
)

// MigrateResult is what Migrate copied.
type MigrateResult struct {
	Runs, Instances, Logs int
	Lineage               string
}

// Migrate copies the state at src (a file or a PostgreSQL URL) to dst, which must
// not hold a state with runs: every run with its id, every instance record and
// every captured log, byte for byte. It holds src's writer lock throughout, taken as
// a writer takes it (for PostgreSQL: a new epoch, this process recorded as holder),
// so no run changes it meanwhile and a writer that held it before is fenced out. The copy keeps src's lineage id (a file of an older
// flow gets one) and names src as its origin. Only once the copy reads back equal
// to src is src marked as moved, through the fence (a moved state refuses writers
// and names dst); nothing else of src's records changes. A copy that fails or does not verify is removed.
func Migrate(src, dst string) (*MigrateResult, error) {
	if src == dst {
		return nil, errors.New("the source and the destination are the same")
	}
	if ok, err := Exists(src); err != nil {
		return nil, err
	} else if !ok {
		return nil, fmt.Errorf("there is no state at %s", Display(src))
	}
	from, err := openSource(src)
	if err != nil {
		return nil, err
	}
	defer from.Close()
	id, err := from.Identity()
	if err != nil {
		return nil, err
	}
	if id.MovedTo != "" {
		return nil, &MovedError{Location: Display(src), To: id.MovedTo}
	}
	if ok, err := Exists(dst); err != nil {
		return nil, err
	} else if ok {
		if n, err := countRuns(dst); err != nil || n > 0 {
			return nil, fmt.Errorf("%s: %w (%d runs); migrate only to a new state", Display(dst), errNotEmpty, n)
		}
	}
	to, err := Open(dst, Options{})
	if err != nil {
		return nil, err
	}
	if id.Lineage == "" {
		id.Lineage = newLineage()
	}
	res, err := copyState(from, to, id)
	if cerr := to.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = verify(from, dst)
	}
	if err != nil {
		removeState(dst)
		return nil, fmt.Errorf("migrate %s to %s (the copy was removed; the source is unchanged): %w", Display(src), Display(dst), err)
	}
	res.Lineage = id.Lineage
	return res, from.markMoved(Identity{Lineage: id.Lineage, MovedTo: Display(dst)})
}

// openSource opens src holding its writer lock without writing to its records: a
// file writable (exclusive flock; bbolt writes nothing until a transaction), a
// PostgreSQL state as a writer does (a new epoch, this process recorded as holder),
// so `flow state lock` names the migration, a second writer is refused naming it,
// and a writer that held the state before is fenced out. A broken connection is taken
// back as a writer's is, only under the same epoch: no writer can have changed src
// in between.
func openSource(src string) (*Store, error) {
	return Open(src, Options{})
}

func countRuns(loc string) (int, error) {
	s, err := Open(loc, Options{ReadOnly: true})
	if err != nil {
		return 0, err
	}
	defer s.Close()
	runs, err := s.Runs()
	return len(runs), err
}

func copyState(from, to *Store, id Identity) (*MigrateResult, error) {
	if runs, err := to.Runs(); err != nil || len(runs) > 0 {
		return nil, fmt.Errorf("%w: %d runs", errNotEmpty, len(runs))
	}
	if err := to.setIdentity(Identity{Lineage: id.Lineage, Origin: Display(from.path)}); err != nil {
		return nil, err
	}
	runs, err := from.Runs()
	if err != nil {
		return nil, err
	}
	res := &MigrateResult{}
	for _, r := range runs {
		want := r.ID
		if err := to.CreateRun(r); err != nil {
			return nil, err
		}
		if r.ID != want {
			return nil, fmt.Errorf("run %d was copied as run %d (the source's run ids have a gap)", want, r.ID)
		}
		ins, err := from.Instances(r.ID)
		if err != nil {
			return nil, err
		}
		logs, err := from.allLogs(r.ID)
		if err != nil {
			return nil, err
		}
		for i := 0; i < len(ins) || i == 0; i += 1000 {
			chunk := ins[i:min(i+1000, len(ins))]
			var l map[string][]byte
			if i == 0 {
				l = logs
			}
			if err := to.Commit(r.ID, nil, chunk, l); err != nil {
				return nil, err
			}
		}
		res.Runs++
		res.Instances += len(ins)
		res.Logs += len(logs)
	}
	return res, nil
}

// verify reads dst back and compares it with from, record by record.
func verify(from *Store, dst string) error {
	to, err := Open(dst, Options{ReadOnly: true})
	if err != nil {
		return err
	}
	defer to.Close()
	a, err := from.Runs()
	if err != nil {
		return err
	}
	b, err := to.Runs()
	if err != nil {
		return err
	}
	if !sameJSON(a, b) {
		return errors.New("verify: the runs differ")
	}
	la, _ := from.LatestRun()
	lb, _ := to.LatestRun()
	if !sameJSON(la, lb) {
		return errors.New("verify: the latest run differs")
	}
	for _, r := range a {
		ia, err := from.Instances(r.ID)
		if err != nil {
			return err
		}
		ib, err := to.Instances(r.ID)
		if err != nil {
			return err
		}
		if !sameJSON(ia, ib) {
			return fmt.Errorf("verify: the instances of run %d differ", r.ID)
		}
		ga, err := from.allLogs(r.ID)
		if err != nil {
			return err
		}
		gb, err := to.allLogs(r.ID)
		if err != nil {
			return err
		}
		if len(ga) != len(gb) {
			return fmt.Errorf("verify: run %d has %d logs, the copy %d", r.ID, len(ga), len(gb))
		}
		for k, v := range ga {
			if !bytes.Equal(v, gb[k]) {
				return fmt.Errorf("verify: the log of %s in run %d differs", k, r.ID)
			}
		}
	}
	return nil
}

func sameJSON(a, b any) bool {
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(ja, jb)
}

// allLogs returns every captured log of run runID.
func (s *Store) allLogs(runID uint64) (map[string][]byte, error) {
	out := map[string][]byte{}
	if s.pg != nil {
		err := s.pg.do(func(ctx context.Context, conn *pgx.Conn) error {
			rows, err := conn.Query(ctx, "SELECT address, data FROM "+s.pg.loc.table("logs")+" WHERE state = $1 AND run = $2", s.pg.loc.name, runID)
			if err != nil {
				return err
			}
			defer rows.Close()
			for rows.Next() {
				var k string
				var v []byte
				if err := rows.Scan(&k, &v); err != nil {
					return err
				}
				out[k] = v
			}
			return rows.Err()
		})
		return out, err
	}
	err := s.view(func(tx *bolt.Tx) error {
		b, err := runBucket(tx, runID, bucketLogs)
		if err != nil {
			return err
		}
		return b.ForEach(func(k, v []byte) error {
			out[string(k)] = append([]byte(nil), v...)
			return nil
		})
	})
	return out, err
}

// markMoved records on a verified source where it went.
func (s *Store) markMoved(id Identity) error {
	if s.pg == nil {
		old, err := s.Identity()
		if err != nil {
			return err
		}
		if old.Lineage != "" {
			id.Lineage = "" // keep it
		}
		return s.setIdentity(id)
	}
	// Through the fence: a migration whose lock another writer took marks nothing.
	return s.pg.write(func(b *pgx.Batch) {
		b.Queue("UPDATE "+s.pg.loc.table("states")+" SET moved_to = $2 WHERE name = $1", s.pg.loc.name, id.MovedTo)
	})
}

// removeState removes a copy that failed: the file, or the state's rows.
func removeState(loc string) {
	if !IsURL(loc) {
		os.Remove(loc)
		return
	}
	l, err := parseLocation(loc)
	if err != nil {
		return
	}
	ctx := context.Background()
	conn, err := l.connect(ctx)
	if err != nil {
		return
	}
	defer conn.Close(ctx)
	conn.Exec(ctx, "DELETE FROM "+l.table("states")+" WHERE name = $1", l.name)
}
