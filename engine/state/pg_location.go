package state

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"regexp"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// IsURL reports whether loc names a state in PostgreSQL (postgres:// or
// postgresql://) rather than a file.
func IsURL(loc string) bool {
	return strings.HasPrefix(loc, "postgres://") || strings.HasPrefix(loc, "postgresql://")
}

// DefaultStateName and DefaultSchema are the state name and schema of a
// PostgreSQL URL that names neither (query parameters state= and schema=).
const (
	DefaultStateName = "default"
	DefaultSchema    = "flow"
)

// pgLocation is a parsed PostgreSQL state URL: where to connect, which schema
// (one per deployment) and which state name (one row set per name) in it.
type pgLocation struct {
	config  *pgx.ConnConfig
	schema  string
	name    string
	display string // the URL without its password, for messages
	addr    string // host:port, for messages
}

var identifier = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

// parseLocation splits flow's own query parameters (state, schema) off loc and
// hands the rest to pgx. It connects to nothing.
func parseLocation(loc string) (*pgLocation, error) {
	u, err := url.Parse(loc)
	if err != nil {
		return nil, fmt.Errorf("malformed PostgreSQL URL: %w", redactURLError(err))
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return nil, fmt.Errorf("malformed PostgreSQL URL %s: %w", u.Redacted(), err)
	}
	l := &pgLocation{schema: DefaultSchema, name: DefaultStateName}
	if v := q.Get("schema"); v != "" {
		l.schema = v
	}
	if v := q.Get("state"); v != "" {
		l.name = v
	}
	if !identifier.MatchString(l.schema) {
		return nil, fmt.Errorf("malformed PostgreSQL URL %s: schema %q is not a lower-case SQL name", u.Redacted(), l.schema)
	}
	if strings.TrimSpace(l.name) == "" || len(l.name) > 200 {
		return nil, fmt.Errorf("malformed PostgreSQL URL %s: state name %q must be 1 to 200 characters", u.Redacted(), l.name)
	}
	q.Del("schema")
	q.Del("state")
	u.RawQuery = q.Encode()
	if u.Host == "" {
		return nil, fmt.Errorf("malformed PostgreSQL URL %s: no host", u.Redacted())
	}
	if strings.TrimPrefix(u.Path, "/") == "" {
		return nil, fmt.Errorf("malformed PostgreSQL URL %s: no database (postgres://USER@HOST:PORT/DATABASE)", u.Redacted())
	}
	cfg, err := pgx.ParseConfig(u.String())
	if err != nil {
		return nil, fmt.Errorf("malformed PostgreSQL URL %s: %w", u.Redacted(), errors.Unwrap(err))
	}
	// Whatever the URL or the environment says, a write is durable only once
	// on disk: the run's checkpoints rely on it.
	cfg.RuntimeParams["synchronous_commit"] = "on"
	cfg.RuntimeParams["application_name"] = "flow"
	l.config = cfg
	shown := *u
	q = shown.Query()
	q.Set("state", l.name)
	if l.schema != DefaultSchema {
		q.Set("schema", l.schema)
	}
	shown.RawQuery = q.Encode()
	l.display = shown.Redacted()
	l.addr = net.JoinHostPort(cfg.Host, fmt.Sprint(cfg.Port))
	return l, nil
}

// redactURLError drops the URL from a url.Error: it may hold a password.
func redactURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// table is the quoted name of table in the location's schema.
func (l *pgLocation) table(name string) string { return pgx.Identifier{l.schema, name}.Sanitize() }

// connect opens one connection (never a pool: the writer's lock lives in its session).
func (l *pgLocation) connect(ctx context.Context) (*pgx.Conn, error) {
	conn, err := pgx.ConnectConfig(ctx, l.config.Copy())
	if err != nil {
		return nil, l.connectError(err)
	}
	return conn, nil
}

// ConnectError is a PostgreSQL state that could not be reached or logged in to:
// one line naming the address and what went wrong.
type ConnectError struct {
	Addr   string // host:port
	User   string
	DB     string
	Reason string
	Err    error
}

func (e *ConnectError) Error() string {
	return fmt.Sprintf("PostgreSQL state at %s (database %q, user %q): %s", e.Addr, e.DB, e.User, e.Reason)
}

func (e *ConnectError) Unwrap() error { return e.Err }

// connectError turns pgx's connect error into one line saying why.
func (l *pgLocation) connectError(err error) error {
	ce := &ConnectError{Addr: l.addr, User: l.config.User, DB: l.config.Database, Err: err}
	var pe *pgconn.PgError
	var ne net.Error
	var oe *net.OpError
	switch {
	case errors.As(err, &pe) && pe.Code == "28P01":
		ce.Reason = "wrong password"
	case errors.As(err, &pe) && pe.Code == "3D000":
		ce.Reason = "the database does not exist (flow creates none; create it with createdb)"
	case errors.As(err, &pe) && (pe.Code == "28000" || pe.Code == "28P01"):
		ce.Reason = "login refused: " + pe.Message
	case errors.As(err, &pe):
		ce.Reason = pe.Message + " (SQLSTATE " + pe.Code + ")"
	case errors.As(err, &oe):
		ce.Reason = "cannot reach the server: " + oe.Err.Error()
	case errors.As(err, &ne):
		ce.Reason = "cannot reach the server: " + ne.Error()
	default:
		ce.Reason = innermost(err).Error()
	}
	return ce
}

func innermost(err error) error {
	for {
		next := errors.Unwrap(err)
		if next == nil {
			return err
		}
		err = next
	}
}
