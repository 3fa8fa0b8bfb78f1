// Package state is flow's checkpoint store: it keeps every run, the record of
// every finished task instance and the output captured from it in one bbolt
// file (by default .flow/NAME.db, named after the flow), or in PostgreSQL when
// the location is a postgres:// URL, so that `flow resume` can continue an
// interrupted run.
//
// The package owns the on-disk format of that file, its locking and its
// schema version. It does not own scheduling, what a fingerprint means, or
// when to commit: the engine decides all of that, and this package makes each
// commit atomic and durable (a commit is one fsynced bbolt transaction, so
// after a crash the file holds either all of it or none of it).
//
// # On-disk layout (schema version 1)
//
//	meta                       bucket
//	  schema_version           "1"
//	  latest                   8-byte big-endian id of the most recently created run
//	runs                       bucket; its sequence allocates run ids
//	  <id>                     Run as JSON (id is 8 bytes, big-endian)
//	run                        bucket
//	  <id>                     bucket, one per run
//	    instances              bucket: address -> Instance as JSON
//	    logs                   bucket: address -> captured output (at most MaxLogSize bytes)
//
// Each run keeps its instances and logs in buckets of its own, so the cost of
// a commit depends on the size of the batch and (logarithmically) on the size
// of that run, not on how many runs the file holds.
//
// # Files
//
// Open creates a missing state file atomically (a complete database is built
// in memory, written next to it with one fsync and then linked into place), so a
// file at the state path is always either a complete flow state or someone
// else's file. Options.FirstRun puts the first run in that same creation. A file that is
// not a flow state, or that was written by a newer flow, is reported as a
// *FormatError and never modified.
//
// A writable Store holds an exclusive lock on the file and a read-only Store
// a shared one (bbolt's flock), so one process at a time may write and
// readers do not see a file that is being written. A writable Store records
// its process id in the file's path plus ".pid" so that a process that finds
// the file locked can name the holder in a *LockedError.
//
// # PostgreSQL
//
// Open of a postgres://USER@HOST:PORT/DB?state=NAME&schema=S URL gives a Store with the
// same methods and the same records (each Run and Instance the same JSON document,
// stored as bytea) in schema S (default "flow"), one row set per state NAME (default
// "default"); pg_schema.go creates and migrates the schema. A writable Store holds a
// session advisory lock keyed by schema and name on its one connection, and a fencing
// epoch checked in every write's transaction (pg_lock.go); a broken connection is
// reconnected within Options.RetryFor (pg_store.go). Readers take no lock. Migrate
// copies a state between the two backends (migrate.go). The package does not own
// the database, its roles or its server settings.
package state
