package engine

import "github.com/flowdev/flow/engine/state"

// StateLock reports who holds the writer lock of the state at loc (a file or a
// PostgreSQL URL), if anyone: what `flow state lock` shows.
func StateLock(loc string) (*state.LockInfo, error) { return state.Lock(loc) }

// MigrateState copies the state at src to dst (file <-> PostgreSQL), verifies the
// copy and marks src as moved; see state.Migrate.
func MigrateState(src, dst string) (*state.MigrateResult, error) { return state.Migrate(src, dst) }
