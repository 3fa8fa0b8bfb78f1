package state

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// pgStore is a state in PostgreSQL: every method runs on one connection (the
// writer's holds its lock), one call at a time. A call whose connection breaks
// (the server restarted, the network dropped) connects again and repeats within
// retryFor; every write is idempotent (records replace records by key, run ids are
// chosen before the first attempt), so a write whose commit was lost in the break
// is stored once.
type pgStore struct {
	loc      *pgLocation
	readOnly bool
	retryFor time.Duration
	waiting  func(error, time.Duration)

	createMu sync.Mutex // one createRun at a time: it picks the id before it writes

	mu     sync.Mutex
	conn   *pgx.Conn // nil after a break until the next call connects
	holder Holder    // the writer's; Epoch is its fencing epoch
	closed bool
	down   bool // Waiting was told of a break and not yet of the connection back

	// The writer's lease, read without mu (a call holds mu through a whole outage).
	leaseMu   sync.Mutex
	confirmed time.Time // when the last round trip that confirmed the lock was sent; zero while in doubt
	lost      error     // the *FencedError once another writer took the state over
	giveUpAt  time.Time // set by giveUpWithin: no call waits for a broken connection past it
	notBefore time.Time // the previous holder's lease may run until then: no lease before it
}

// leaseFor is how long a round trip that confirmed the writer's lock (any call on its
// locked session, a reconnection that found its epoch unchanged) vouches for it: a
// writer starts new work only within leaseFor of such a round trip (Store.Lease).
const leaseFor = 2 * time.Second

// confirm renews the lease as of sent, when the round trip that confirmed it was sent.
func (p *pgStore) confirm(sent time.Time) {
	p.leaseMu.Lock()
	defer p.leaseMu.Unlock()
	if p.lost == nil && sent.After(p.confirmed) {
		p.confirmed = sent
	}
}

// doubt ends the lease: the writer's connection broke, so its lock may be gone.
func (p *pgStore) doubt() {
	p.leaseMu.Lock()
	p.confirmed = time.Time{}
	p.leaseMu.Unlock()
}

// lose ends the lease for good: another writer took the state over.
func (p *pgStore) lose(err error) {
	p.leaseMu.Lock()
	p.confirmed, p.lost = time.Time{}, err
	p.leaseMu.Unlock()
}

// lease reports whether the lock was confirmed within leaseFor and not doubted since,
// and the *FencedError once it is lost.
func (p *pgStore) lease() (bool, error) {
	p.leaseMu.Lock()
	defer p.leaseMu.Unlock()
	if p.lost != nil {
		return false, p.lost
	}
	now := time.Now()
	return !p.confirmed.IsZero() && now.Sub(p.confirmed) < leaseFor && !now.Before(p.notBefore), nil
}

// confirmLease is one round trip that checks the writer's epoch (reconnecting as any
// call does), which renews the lease; it first waits out a previous holder's lease.
func (p *pgStore) confirmLease() error {
	p.leaseMu.Lock()
	wait := time.Until(p.notBefore)
	p.leaseMu.Unlock()
	if wait > 0 {
		time.Sleep(wait)
	}
	return p.do(func(ctx context.Context, conn *pgx.Conn) error {
		var epoch int64
		if err := conn.QueryRow(ctx, "SELECT epoch FROM "+p.loc.table("states")+" WHERE name = $1", p.loc.name).Scan(&epoch); err != nil {
			return err
		}
		if epoch != p.holder.Epoch {
			return &FencedError{Location: p.loc.display, Epoch: p.holder.Epoch}
		}
		return nil
	})
}

// giveUpWithin bounds every call's wait for a broken connection, the ones waiting now
// included, to d from now.
func (p *pgStore) giveUpWithin(d time.Duration) {
	p.leaseMu.Lock()
	defer p.leaseMu.Unlock()
	if at := time.Now().Add(d); p.giveUpAt.IsZero() || at.Before(p.giveUpAt) {
		p.giveUpAt = at
	}
}

// deadline is the end of a call's wait for a broken connection that began at start.
func (p *pgStore) deadline(start time.Time) (time.Time, bool) {
	p.leaseMu.Lock()
	defer p.leaseMu.Unlock()
	d := start.Add(p.retryFor)
	if !p.giveUpAt.IsZero() && p.giveUpAt.Before(d) {
		return p.giveUpAt, true
	}
	return d, false
}

// maxAddress is the longest instance address either backend stores (bbolt's
// largest key).
const maxAddress = 32 << 10

// defaultRetryFor is how long a call waits for a broken connection to come back.
const defaultRetryFor = 60 * time.Second

// openPG opens the state at loc. A writable open takes the writer lock at once or
// fails with a *LockedError; it creates the schema and the state if missing (with
// opts.FirstRun as its first run). A read-only open of a state that does not exist
// fails with an error wrapping fs.ErrNotExist and creates nothing.
func openPG(loc string, opts Options) (*Store, error) {
	l, err := parseLocation(loc)
	if err != nil {
		return nil, err
	}
	ctx := context.Background()
	conn, err := l.connect(ctx)
	if err != nil {
		return nil, err
	}
	p := &pgStore{loc: l, readOnly: opts.ReadOnly, retryFor: opts.RetryFor, waiting: opts.Waiting, conn: conn}
	if p.retryFor <= 0 {
		p.retryFor = defaultRetryFor
	}
	if opts.ReadOnly {
		ok, err := l.exists(ctx, conn)
		if err == nil && !ok {
			err = fmt.Errorf("state %s: nothing has run there yet (%w)", l.display, fs.ErrNotExist)
		}
		if err != nil {
			conn.Close(ctx)
			return nil, err
		}
		return &Store{path: loc, readOnly: true, pg: p}, nil
	}
	lockWait := opts.LockTimeout
	if lockWait <= 0 {
		lockWait = defaultLockTimeout
	}
	locking := time.Now()
	if err := p.lock(ctx, opts.FirstRun, lockWait); err != nil {
		conn.Close(ctx)
		return nil, err
	}
	p.confirm(locking)
	st := &Store{path: loc, pg: p}
	if err := st.refuseMoved(); err != nil {
		st.Close()
		return nil, err
	}
	return st, nil
}

func (p *pgStore) lock(ctx context.Context, first *Run, lockWait time.Duration) error {
	if first != nil {
		if err := first.check(); err != nil {
			return fmt.Errorf("create state %s: first run: %w", p.loc.display, err)
		}
	}
	if err := p.loc.migrate(ctx, p.conn); err != nil {
		return fmt.Errorf("state %s: %w", p.loc.display, err)
	}
	p.holder = thisHolder()
	// A holder that just died keeps its lock until its server process notices the
	// closed connection, a few milliseconds; wait up to lockWait for that, as a
	// file's writer waits for its flock.
	deadline := time.Now().Add(lockWait)
	var created, unreleased bool
	for {
		var err error
		created, unreleased, err = p.loc.tryLock(ctx, p.conn, &p.holder)
		if err == nil {
			break
		}
		var le *LockedError
		if !errors.As(err, &le) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(50 * time.Millisecond)
	}
	if unreleased {
		// The previous holder's session ended without it releasing the lock: it may be
		// paused and believe in its lease, which ran out at most leaseFor from now.
		p.leaseMu.Lock()
		p.notBefore = time.Now().Add(leaseFor)
		p.leaseMu.Unlock()
	}
	if created && first != nil {
		id, err := p.createRun(first)
		if err != nil {
			return err
		}
		first.ID = id
	}
	return nil
}

// exists reports whether the state has been created (schema and row).
func (l *pgLocation) exists(ctx context.Context, conn *pgx.Conn) (bool, error) {
	v, err := l.version(ctx, conn)
	if err != nil || v < 1 {
		return false, err
	}
	if v > pgSchemaVersion {
		return false, &FormatError{Path: l.display, Reason: fmt.Sprintf("schema %q is version %d, written by a newer flow", l.schema, v)}
	}
	var ok bool
	err = conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM "+l.table("states")+" WHERE name = $1)", l.name).Scan(&ok)
	return ok, err
}

// Exists reports whether a state exists at loc: a file, or a state of that name in
// PostgreSQL. It creates nothing.
func Exists(loc string) (bool, error) {
	if !IsURL(loc) {
		_, err := statFile(loc)
		if errors.Is(err, fs.ErrNotExist) {
			return false, nil
		}
		return err == nil, err
	}
	l, err := parseLocation(loc)
	if err != nil {
		return false, err
	}
	ctx := context.Background()
	conn, err := l.connect(ctx)
	if err != nil {
		return false, err
	}
	defer conn.Close(ctx)
	return l.exists(ctx, conn)
}

func (p *pgStore) close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil
	}
	p.closed = true
	if p.conn == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if !p.readOnly {
		// Best effort: the lock ends with the session anyway. Released tells the next
		// holder that this one will start nothing more: it need not wait out the lease.
		p.conn.Exec(ctx, "UPDATE "+p.loc.table("states")+` SET holder = holder || '{"released": true}' WHERE name = $1 AND epoch = $2`,
			p.loc.name, p.holder.Epoch)
		p.conn.Exec(ctx, "SELECT pg_advisory_unlock($1)", lockKey(p.loc.schema, p.loc.name))
	}
	return p.conn.Close(ctx)
}

// do runs fn on the connection, connecting again (and, for the writer, taking its
// lock back if nobody took the state over) while the connection is broken, for at
// most retryFor (less after giveUpWithin). For the writer, each round trip of fn that
// succeeds renews the lease, a break puts it in doubt and a refusal by the fence (or
// a reconnection that finds another epoch) loses it: every later write then fails at
// once with the same *FencedError. Waiting hears of an outage once, however many
// calls wait through it, and of the connection being back only after a call on it
// succeeded (for the writer, after the reconnection re-confirmed its epoch).
func (p *pgStore) do(fn func(ctx context.Context, conn *pgx.Conn) error) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return ErrClosed
	}
	ctx := context.Background()
	began := time.Now()
	var last error
	for wait := 100 * time.Millisecond; ; wait = min(2*wait, 2*time.Second) {
		deadline, gaveUp := p.deadline(began)
		if p.conn == nil {
			if err := p.reconnect(ctx, deadline); err != nil {
				var fe *FencedError
				if errors.As(err, &fe) {
					p.lose(fe)
				}
				if errors.As(err, &fe) || !retryable(err) {
					return err
				}
				last = err
			}
		}
		if p.conn != nil {
			sent := time.Now()
			err := fn(ctx, p.conn)
			var fe *FencedError
			if isFenceError(err) {
				err = &FencedError{Location: p.loc.display, Epoch: p.holder.Epoch}
			}
			if errors.As(err, &fe) && !p.readOnly {
				p.lose(fe)
				return err
			}
			if err == nil || !retryable(err) && !p.conn.IsClosed() {
				if !p.readOnly {
					p.confirm(sent) // an answer on the locked session: the lock is still ours
				}
				if p.down && p.waiting != nil {
					p.waiting(nil, 0)
				}
				p.down = false
				return err
			}
			last = err
			p.conn.Close(ctx)
			p.conn = nil
			if !p.readOnly {
				p.doubt()
			}
		}
		if !p.down && p.waiting != nil {
			p.waiting(last, time.Until(deadline))
		}
		p.down = true
		if time.Now().Add(wait).After(deadline) {
			if gaveUp {
				return fmt.Errorf("state %s: the connection broke, and the wait for it was cut short: %w", p.loc.display, last)
			}
			return fmt.Errorf("state %s: the connection broke and did not come back within %s: %w", p.loc.display, p.retryFor, last)
		}
		time.Sleep(wait)
	}
}

// reconnect connects again (bounded by deadline, and by 10 s a try) and, for the
// writer, takes its lock back under the same epoch.
func (p *pgStore) reconnect(ctx context.Context, deadline time.Time) error {
	ctx, cancel := context.WithTimeout(ctx, max(min(time.Until(deadline), 10*time.Second), time.Second))
	defer cancel()
	conn, err := p.loc.connect(ctx)
	if err != nil {
		return err
	}
	if !p.readOnly {
		if err := p.loc.relock(ctx, conn, &p.holder); err != nil {
			conn.Close(ctx)
			return err
		}
	}
	p.conn = conn
	return nil
}

// retryable reports whether err is a broken or refused connection (worth connecting
// again) rather than an answer.
func retryable(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code[:2] {
		case "08", "57": // connection exception; operator intervention (shutdown, starting up)
			return true
		}
		return false
	}
	var ce *ConnectError
	if errors.As(err, &ce) {
		var pe *pgconn.PgError
		return !errors.As(ce.Err, &pe) || pe.Code[:2] == "57"
	}
	var ne net.Error
	return errors.As(err, &ne) || pgconn.SafeToRetry(err) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, net.ErrClosed) || isConnClosed(err)
}

// isConnClosed reports the errors of a connection that broke mid-call.
func isConnClosed(err error) bool {
	return errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNREFUSED)
}

func newLineage() string {
	b := make([]byte, 16)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// fence is the first statement of every write batch.
func (p *pgStore) fence(b *pgx.Batch) {
	b.Queue("SELECT "+pgxIdent(p.loc.schema)+".fence($1, $2)", p.loc.name, p.holder.Epoch)
}

func pgxIdent(s string) string { return pgx.Identifier{s}.Sanitize() }

// write sends b (after the fence) as one implicit transaction: all or nothing.
func (p *pgStore) write(build func(b *pgx.Batch)) error {
	if p.readOnly {
		return errors.New("state opened read-only")
	}
	if _, lost := p.lease(); lost != nil {
		return lost
	}
	return p.do(func(ctx context.Context, conn *pgx.Conn) error {
		b := &pgx.Batch{}
		p.fence(b)
		build(b)
		return conn.SendBatch(ctx, b).Close()
	})
}

func (p *pgStore) createRun(r *Run) (uint64, error) {
	p.createMu.Lock()
	defer p.createMu.Unlock()
	var id uint64
	err := p.do(func(ctx context.Context, conn *pgx.Conn) error {
		return conn.QueryRow(ctx, "SELECT coalesce(max(id), 0) + 1 FROM "+p.loc.table("runs")+" WHERE state = $1", p.loc.name).Scan(&id)
	})
	if err != nil {
		return 0, err
	}
	rec := *r
	rec.ID = id
	data, err := json.Marshal(&rec)
	if err != nil {
		return 0, err
	}
	// The id is fixed before the first attempt, so a retry after a lost commit
	// replaces the same run instead of adding a second.
	err = p.write(func(b *pgx.Batch) {
		b.Queue("INSERT INTO "+p.loc.table("runs")+" (state, id, doc) VALUES ($1, $2, $3) ON CONFLICT (state, id) DO UPDATE SET doc = EXCLUDED.doc",
			p.loc.name, id, data)
		b.Queue("UPDATE "+p.loc.table("states")+" SET latest = $2 WHERE name = $1", p.loc.name, id)
	})
	return id, err
}

func (p *pgStore) putRun(r *Run) error {
	data, err := json.Marshal(r)
	if err != nil {
		return err
	}
	var found bool
	err = p.do(func(ctx context.Context, conn *pgx.Conn) error {
		return conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM "+p.loc.table("runs")+" WHERE state = $1 AND id = $2)", p.loc.name, r.ID).Scan(&found)
	})
	if err != nil {
		return err
	}
	if !found {
		return ErrNotFound
	}
	return p.write(func(b *pgx.Batch) {
		b.Queue("UPDATE "+p.loc.table("runs")+" SET doc = $3 WHERE state = $1 AND id = $2", p.loc.name, r.ID, data)
	})
}

func (p *pgStore) getRun(id uint64) (*Run, error) {
	var data []byte
	err := p.do(func(ctx context.Context, conn *pgx.Conn) error {
		return conn.QueryRow(ctx, "SELECT doc FROM "+p.loc.table("runs")+" WHERE state = $1 AND id = $2", p.loc.name, id).Scan(&data)
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	return decodeRun(data)
}

func decodeRun(data []byte) (*Run, error) {
	r := new(Run)
	if err := json.Unmarshal(data, r); err != nil {
		return nil, fmt.Errorf("decode run record: %w", err)
	}
	return r, nil
}

func (p *pgStore) latestRun() (*Run, error) {
	var data []byte
	err := p.do(func(ctx context.Context, conn *pgx.Conn) error {
		return conn.QueryRow(ctx, "SELECT r.doc FROM "+p.loc.table("states")+" s JOIN "+p.loc.table("runs")+
			" r ON r.state = s.name AND r.id = s.latest WHERE s.name = $1", p.loc.name).Scan(&data)
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return decodeRun(data)
}

func (p *pgStore) runs() ([]*Run, error) {
	var docs [][]byte
	err := p.do(func(ctx context.Context, conn *pgx.Conn) error {
		rows, err := conn.Query(ctx, "SELECT doc FROM "+p.loc.table("runs")+" WHERE state = $1 ORDER BY id", p.loc.name)
		if err != nil {
			return err
		}
		docs, err = pgx.CollectRows(rows, pgx.RowTo[[]byte])
		return err
	})
	if err != nil {
		return nil, err
	}
	runs := make([]*Run, 0, len(docs))
	for _, d := range docs {
		r, err := decodeRun(d)
		if err != nil {
			return nil, err
		}
		runs = append(runs, r)
	}
	return runs, nil
}

func (p *pgStore) runExists(ctx context.Context, conn *pgx.Conn, id uint64) (bool, error) {
	var ok bool
	err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM "+p.loc.table("runs")+" WHERE state = $1 AND id = $2)", p.loc.name, id).Scan(&ok)
	return ok, err
}

func (p *pgStore) instances(runID uint64) ([]*Instance, error) {
	var docs [][]byte
	err := p.do(func(ctx context.Context, conn *pgx.Conn) error {
		// One statement: one snapshot of the run and its records.
		rows, err := conn.Query(ctx, "SELECT i.doc FROM "+p.loc.table("runs")+" r LEFT JOIN "+p.loc.table("instances")+
			" i ON i.state = r.state AND i.run = r.id WHERE r.state = $1 AND r.id = $2 ORDER BY i.address", p.loc.name, runID)
		if err != nil {
			return err
		}
		docs, err = pgx.CollectRows(rows, pgx.RowTo[[]byte])
		return err
	})
	if err != nil {
		return nil, err
	}
	if len(docs) == 0 {
		return nil, ErrNotFound
	}
	out := make([]*Instance, 0, len(docs))
	for _, d := range docs {
		if d == nil {
			continue // the run's row without instances
		}
		in := new(Instance)
		if err := json.Unmarshal(d, in); err != nil {
			return nil, fmt.Errorf("decode instance: %w", err)
		}
		out = append(out, in)
	}
	return out, nil
}

func (p *pgStore) logs(runID uint64, address string) ([]byte, error) {
	var data []byte
	var found bool
	err := p.do(func(ctx context.Context, conn *pgx.Conn) error {
		ok, err := p.runExists(ctx, conn, runID)
		if err != nil || !ok {
			found = ok
			return err
		}
		found = true
		err = conn.QueryRow(ctx, "SELECT data FROM "+p.loc.table("logs")+" WHERE state = $1 AND run = $2 AND address = $3",
			p.loc.name, runID, address).Scan(&data)
		if errors.Is(err, pgx.ErrNoRows) {
			data, err = nil, nil
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, ErrNotFound
	}
	return data, nil
}

// commit is the group commit: one implicit transaction (one round trip) with the
// fence, every record, every log and the run record.
func (p *pgStore) commit(runID uint64, run *Run, records, logged []keyed) error {
	// With records or logs to write, their foreign key on the run says whether it
	// exists, in the same round trip; without, ask.
	if len(records) == 0 && !slices.ContainsFunc(logged, func(k keyed) bool { return len(k.data) > 0 }) {
		var found bool
		err := p.do(func(ctx context.Context, conn *pgx.Conn) (err error) {
			found, err = p.runExists(ctx, conn, runID)
			return err
		})
		if err != nil {
			return err
		}
		if !found {
			return ErrNotFound
		}
	}
	var runDoc []byte
	if run != nil {
		var err error
		if runDoc, err = json.Marshal(run); err != nil {
			return err
		}
	}
	for _, r := range records {
		if len(r.key) > maxAddress {
			return fmt.Errorf("instance %q...: address longer than %d bytes", r.key[:40], maxAddress)
		}
	}
	addrs, docs := split(records)
	var put, gone []keyed
	for _, l := range logged {
		if len(l.data) == 0 {
			gone = append(gone, l)
		} else {
			if len(l.data) > MaxLogSize {
				l.data = l.data[len(l.data)-MaxLogSize:]
			}
			put = append(put, l)
		}
	}
	logAddrs, logData := split(put)
	goneAddrs, _ := split(gone)
	err := p.write(func(b *pgx.Batch) {
		if len(addrs) > 0 {
			b.Queue("INSERT INTO "+p.loc.table("instances")+" (state, run, address, doc) SELECT $1, $2, a, d FROM unnest($3::text[], $4::bytea[]) AS u(a, d)"+
				" ON CONFLICT (state, run, address) DO UPDATE SET doc = EXCLUDED.doc", p.loc.name, runID, addrs, docs)
		}
		if len(logAddrs) > 0 {
			b.Queue("INSERT INTO "+p.loc.table("logs")+" (state, run, address, data) SELECT $1, $2, a, d FROM unnest($3::text[], $4::bytea[]) AS u(a, d)"+
				" ON CONFLICT (state, run, address) DO UPDATE SET data = EXCLUDED.data", p.loc.name, runID, logAddrs, logData)
		}
		if len(goneAddrs) > 0 {
			b.Queue("DELETE FROM "+p.loc.table("logs")+" WHERE state = $1 AND run = $2 AND address = ANY($3::text[])", p.loc.name, runID, goneAddrs)
		}
		if runDoc != nil {
			b.Queue("UPDATE "+p.loc.table("runs")+" SET doc = $3 WHERE state = $1 AND id = $2", p.loc.name, runID, runDoc)
		}
	})
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "23503" { // foreign_key_violation: no such run
		return ErrNotFound
	}
	return err
}

func split(ks []keyed) ([]string, [][]byte) {
	keys := make([]string, len(ks))
	data := make([][]byte, len(ks))
	for i, k := range ks {
		keys[i], data[i] = k.key, k.data
	}
	return keys, slices.Clip(data)
}

// lockInfo reads the lock's holder.
func (p *pgStore) lockInfo() (*LockInfo, error) {
	var info *LockInfo
	err := p.do(func(ctx context.Context, conn *pgx.Conn) (err error) {
		info, err = p.loc.lockInfo(ctx, conn)
		return err
	})
	return info, err
}
