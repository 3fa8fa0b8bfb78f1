package state

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
)

// pgMigrations are the steps from one schema version to the next: step i takes
// a schema at version i to version i+1. Records are the JSON documents the file
// backend stores (bytea, byte for byte), so a new field of Run or Instance
// needs no step. {{s}} stands for the quoted schema name.
var pgMigrations = []string{
	// 0 -> 1
	`CREATE TABLE {{s}}.states (
		name       text PRIMARY KEY,
		lineage    text NOT NULL,
		epoch      bigint NOT NULL DEFAULT 0,
		latest     bigint NOT NULL DEFAULT 0,
		holder     jsonb,
		origin     text,           -- the state this one was migrated from
		moved_to   text,           -- set once this state was migrated elsewhere
		created_at timestamptz NOT NULL DEFAULT now()
	);
	CREATE TABLE {{s}}.runs (
		state text NOT NULL REFERENCES {{s}}.states (name) ON DELETE CASCADE,
		id    bigint NOT NULL,
		doc   bytea NOT NULL,
		PRIMARY KEY (state, id)
	);
	CREATE TABLE {{s}}.instances (
		state   text NOT NULL,
		run     bigint NOT NULL,
		address text COLLATE "C" NOT NULL,
		doc     bytea NOT NULL,
		PRIMARY KEY (state, run, address),
		FOREIGN KEY (state, run) REFERENCES {{s}}.runs (state, id) ON DELETE CASCADE
	);
	CREATE TABLE {{s}}.logs (
		state   text NOT NULL,
		run     bigint NOT NULL,
		address text COLLATE "C" NOT NULL,
		data    bytea NOT NULL,
		PRIMARY KEY (state, run, address),
		FOREIGN KEY (state, run) REFERENCES {{s}}.runs (state, id) ON DELETE CASCADE
	);
	-- fence fails the transaction it runs in unless e is still the state's epoch:
	-- a writer that lost its lock (and another took it) commits nothing.
	CREATE FUNCTION {{s}}.fence(n text, e bigint) RETURNS void LANGUAGE plpgsql AS $$
	DECLARE cur bigint;
	BEGIN
		SELECT epoch INTO cur FROM {{s}}.states WHERE name = n FOR UPDATE;
		IF cur IS DISTINCT FROM e THEN
			RAISE EXCEPTION 'flow state % was taken over (epoch % is now %)', n, e, cur USING ERRCODE = 'FL001';
		END IF;
	END $$;`,
}

// pgSchemaVersion is the schema version this flow writes.
var pgSchemaVersion = len(pgMigrations)

// migrate brings the location's schema to pgSchemaVersion, creating it if
// missing, in one transaction under a transaction-scoped advisory lock (two flows
// migrating at once take turns). A schema of a newer version is an error and is
// left alone.
func (l *pgLocation) migrate(ctx context.Context, conn *pgx.Conn) error {
	return pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", lockKey(l.schema, "")); err != nil {
			return err
		}
		version, err := l.version(ctx, tx)
		if err != nil {
			return err
		}
		if version > pgSchemaVersion {
			return &FormatError{Path: l.display, Reason: fmt.Sprintf("schema %q is version %d, written by a newer flow (this one knows %d)",
				l.schema, version, pgSchemaVersion)}
		}
		if version == pgSchemaVersion {
			return nil
		}
		s := pgx.Identifier{l.schema}.Sanitize()
		if version < 0 {
			if _, err := tx.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+s); err != nil {
				return fmt.Errorf("create schema: %w", err)
			}
			if _, err := tx.Exec(ctx, "CREATE TABLE "+l.table("schema_version")+" (version int NOT NULL)"); err != nil {
				return fmt.Errorf("create schema: %w", err)
			}
			if _, err := tx.Exec(ctx, "INSERT INTO "+l.table("schema_version")+" VALUES (0)"); err != nil {
				return err
			}
			version = 0
		}
		for v := version; v < pgSchemaVersion; v++ {
			if _, err := tx.Exec(ctx, strings.ReplaceAll(pgMigrations[v], "{{s}}", s)); err != nil {
				return fmt.Errorf("migrate schema %q to version %d: %w", l.schema, v+1, err)
			}
		}
		_, err = tx.Exec(ctx, "UPDATE "+l.table("schema_version")+" SET version = $1", pgSchemaVersion)
		return err
	})
}

// version is the schema's version, -1 if it has no flow schema.
func (l *pgLocation) version(ctx context.Context, q querier) (int, error) {
	var exists bool
	if err := q.QueryRow(ctx, "SELECT to_regclass($1) IS NOT NULL", l.table("schema_version")).Scan(&exists); err != nil {
		return 0, err
	}
	if !exists {
		return -1, nil
	}
	var v int
	err := q.QueryRow(ctx, "SELECT version FROM "+l.table("schema_version")).Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	return v, err
}

// querier is a connection or a transaction.
type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}
