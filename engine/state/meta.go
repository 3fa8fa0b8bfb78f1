package state

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	bolt "go.etcd.io/bbolt"
)

// Identity is what a state says about where it comes from: its lineage id (the
// same in every migrated copy), the state it was migrated from, and where it was
// migrated to (a moved state refuses writers).
type Identity struct {
	Lineage string `json:"lineage,omitempty"`
	Origin  string `json:"origin,omitempty"`
	MovedTo string `json:"moved_to,omitempty"`
}

var (
	keyLineage = []byte("lineage")
	keyOrigin  = []byte("origin")
	keyMovedTo = []byte("moved_to")
)

// MovedError refuses a writer of a state that `flow state migrate` copied elsewhere.
type MovedError struct{ Location, To string }

func (e *MovedError) Error() string {
	return fmt.Sprintf("state %s was migrated to %s; use --state %s (this copy is kept read-only)", e.Location, e.To, e.To)
}

// Identity returns the state's identity. A file written before flow kept lineage
// ids has none.
func (s *Store) Identity() (Identity, error) {
	var id Identity
	if s.pg != nil {
		err := s.pg.do(func(ctx context.Context, conn *pgx.Conn) error {
			return conn.QueryRow(ctx, "SELECT lineage, coalesce(origin, ''), coalesce(moved_to, '') FROM "+s.pg.loc.table("states")+
				" WHERE name = $1", s.pg.loc.name).Scan(&id.Lineage, &id.Origin, &id.MovedTo)
		})
		return id, err
	}
	err := s.view(func(tx *bolt.Tx) error {
		m := tx.Bucket(bucketMeta)
		id.Lineage, id.Origin, id.MovedTo = string(m.Get(keyLineage)), string(m.Get(keyOrigin)), string(m.Get(keyMovedTo))
		return nil
	})
	return id, err
}

// setIdentity records lineage and origin (a copy), or movedTo (the source of one).
func (s *Store) setIdentity(id Identity) error {
	if s.pg != nil {
		return s.pg.write(func(b *pgx.Batch) {
			if id.Lineage != "" {
				b.Queue("UPDATE "+s.pg.loc.table("states")+" SET lineage = $2, origin = nullif($3, '') WHERE name = $1",
					s.pg.loc.name, id.Lineage, id.Origin)
			}
			if id.MovedTo != "" {
				b.Queue("UPDATE "+s.pg.loc.table("states")+" SET moved_to = $2 WHERE name = $1", s.pg.loc.name, id.MovedTo)
			}
		})
	}
	return s.update(func(tx *bolt.Tx) error {
		m := tx.Bucket(bucketMeta)
		for k, v := range map[string]string{"lineage": id.Lineage, "origin": id.Origin, "moved_to": id.MovedTo} {
			if v != "" {
				if err := m.Put([]byte(k), []byte(v)); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// refuseMoved fails a writable Open of a state migrated elsewhere.
func (s *Store) refuseMoved() error {
	id, err := s.Identity()
	if err != nil {
		return err
	}
	if id.MovedTo != "" {
		return &MovedError{Location: Display(s.path), To: id.MovedTo}
	}
	return nil
}

var errNotEmpty = errors.New("the destination already holds a state")
