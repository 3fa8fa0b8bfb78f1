package state

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"os/user"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// The writer's lock on a PostgreSQL state is a session advisory lock keyed by
// schema and state name, taken on the writer's one dedicated connection: the
// server drops it when that session ends, however the process ends, so it never
// goes stale. Each lock taken bumps the state's epoch; every write checks, in its
// own transaction, that the epoch is still the writer's (fence), so a writer whose
// session was ended (paused, partitioned) and who reconnects after another took the
// state commits nothing. States with different names never block each other.

// Holder is who holds (or last held) a state's writer lock.
type Holder struct {
	Host       string    `json:"host"`
	PID        int       `json:"pid"`
	User       string    `json:"user"`
	Started    time.Time `json:"started"`
	BackendPID uint32    `json:"backend_pid,omitempty"` // the holder's server process
	Epoch      int64     `json:"epoch,omitempty"`
	// Released is set when the holder closed the state itself; a holder whose session
	// ended otherwise (a crash, a pause, a partition) may still believe in its lease.
	Released bool `json:"released,omitempty"`
}

func (h *Holder) String() string {
	return fmt.Sprintf("flow on host %s (pid %d, user %s, since %s)", h.Host, h.PID, h.User, h.Started.Local().Format(time.RFC3339))
}

// LockInfo is what `flow state lock` shows: whether a writer holds the state now
// and who holds it or held it last.
type LockInfo struct {
	Location string  `json:"location"`
	Held     bool    `json:"held"`
	Holder   *Holder `json:"holder,omitempty"` // nil if no writer ever held it
	Lineage  string  `json:"lineage,omitempty"`
}

// FencedError is a write refused because another writer took the state over
// since this one took its lock: this writer's records are not stored.
type FencedError struct {
	Location string
	Epoch    int64
}

func (e *FencedError) Error() string {
	return fmt.Sprintf("state %s was taken over by another flow (this writer's lock, epoch %d, was lost); nothing more was written", e.Location, e.Epoch)
}

// lockKey is the advisory lock key of state name in schema (name "" locks the
// schema itself, for migrations).
func lockKey(schema, name string) int64 {
	h := fnv.New64a()
	h.Write([]byte("flow\x00" + schema + "\x00" + name))
	return int64(h.Sum64())
}

func thisHolder() Holder {
	host, _ := os.Hostname()
	name := fmt.Sprint(os.Getuid())
	if u, err := user.Current(); err == nil {
		name = u.Username
	}
	return Holder{Host: host, PID: os.Getpid(), User: name, Started: time.Now().UTC().Truncate(time.Second)}
}

// tryLock takes the writer lock of the location on conn without waiting. On success
// it creates the state's row if missing (created reports it), bumps the epoch,
// records h as holder and returns the new epoch; unreleased reports that the previous
// holder did not release the lock itself (its lease may still run). If another session
// holds the lock it returns a *LockedError naming the holder.
func (l *pgLocation) tryLock(ctx context.Context, conn *pgx.Conn, h *Holder) (created, unreleased bool, err error) {
	var ok bool
	if err := conn.QueryRow(ctx, "SELECT pg_try_advisory_lock($1)", lockKey(l.schema, l.name)).Scan(&ok); err != nil {
		return false, false, err
	}
	if !ok {
		le := &LockedError{Path: l.display}
		if info, err := l.lockInfo(ctx, conn); err == nil {
			le.Holder = info.Holder
		}
		if le.Holder != nil {
			le.PID = le.Holder.PID
		}
		return false, false, le
	}
	err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, "INSERT INTO "+l.table("states")+" (name, lineage) VALUES ($1, $2) ON CONFLICT DO NOTHING",
			l.name, newLineage())
		if err != nil {
			return err
		}
		created = tag.RowsAffected() == 1
		var prev []byte
		if err := tx.QueryRow(ctx, "SELECT holder FROM "+l.table("states")+" WHERE name = $1 FOR UPDATE", l.name).Scan(&prev); err != nil {
			return err
		}
		if prev != nil {
			var old Holder
			unreleased = json.Unmarshal(prev, &old) != nil || !old.Released
		}
		h.BackendPID = conn.PgConn().PID()
		if err := tx.QueryRow(ctx, "UPDATE "+l.table("states")+" SET epoch = epoch + 1 WHERE name = $1 RETURNING epoch",
			l.name).Scan(&h.Epoch); err != nil {
			return err
		}
		doc, err := json.Marshal(h)
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, "UPDATE "+l.table("states")+" SET holder = $2 WHERE name = $1", l.name, doc)
		return err
	})
	if err != nil {
		conn.Exec(ctx, "SELECT pg_advisory_unlock($1)", lockKey(l.schema, l.name))
		return false, false, err
	}
	return created, unreleased, nil
}

// relock takes the lock again on a new connection after the old one broke, if
// nobody took the state over meanwhile: the epoch must still be h.Epoch.
func (l *pgLocation) relock(ctx context.Context, conn *pgx.Conn, h *Holder) error {
	var ok bool
	if err := conn.QueryRow(ctx, "SELECT pg_try_advisory_lock($1)", lockKey(l.schema, l.name)).Scan(&ok); err != nil {
		return err
	}
	if !ok {
		le := &LockedError{Path: l.display}
		if info, err := l.lockInfo(ctx, conn); err == nil {
			le.Holder = info.Holder
		}
		return fmt.Errorf("%w: %w", &FencedError{Location: l.display, Epoch: h.Epoch}, le)
	}
	var epoch int64
	if err := conn.QueryRow(ctx, "SELECT epoch FROM "+l.table("states")+" WHERE name = $1", l.name).Scan(&epoch); err != nil {
		return err
	}
	if epoch != h.Epoch {
		conn.Exec(ctx, "SELECT pg_advisory_unlock($1)", lockKey(l.schema, l.name))
		return &FencedError{Location: l.display, Epoch: h.Epoch}
	}
	h.BackendPID = conn.PgConn().PID()
	doc, _ := json.Marshal(h)
	_, err := conn.Exec(ctx, "UPDATE "+l.table("states")+" SET holder = $2 WHERE name = $1 AND epoch = $3", l.name, doc, h.Epoch)
	return err
}

// lockInfo reads who holds the state's lock, if anyone (from pg_locks: the lock,
// not the holder column, says whether it is held).
func (l *pgLocation) lockInfo(ctx context.Context, q querier) (*LockInfo, error) {
	info := &LockInfo{Location: l.display}
	key := uint64(lockKey(l.schema, l.name))
	err := q.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted
		AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
		AND classid = $1 AND objid = $2 AND objsubid = 1)`,
		uint32(key>>32), uint32(key)).Scan(&info.Held)
	if err != nil {
		return nil, err
	}
	var doc []byte
	err = q.QueryRow(ctx, "SELECT holder, lineage FROM "+l.table("states")+" WHERE name = $1", l.name).Scan(&doc, &info.Lineage)
	if errors.Is(err, pgx.ErrNoRows) {
		return info, nil
	}
	if err != nil {
		return nil, err
	}
	if doc != nil {
		info.Holder = new(Holder)
		if err := json.Unmarshal(doc, info.Holder); err != nil {
			return nil, fmt.Errorf("decode lock holder: %w", err)
		}
	}
	return info, nil
}

// isFenceError reports whether err is the fence function's refusal.
func isFenceError(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "FL001"
}
