package engine

import "github.com/flowdev/flow/engine/state"

// LockInfo is who holds (or last held) a state's writer lock; LockHolder is the
// holder: host, pid, user, start.
type (
	LockInfo      = state.LockInfo
	LockHolder    = state.Holder
	MigrateResult = state.MigrateResult
)

// StateLock reports who holds the writer lock of the state at loc (a file or a
// PostgreSQL URL), if anyone: what `flow state lock` shows.
func StateLock(loc string) (*LockInfo, error) { return state.Lock(loc) }

// MigrateState copies the state at src to dst (file <-> PostgreSQL), verifies the
// copy and marks src as moved; see state.Migrate.
func MigrateState(src, dst string) (*MigrateResult, error) { return state.Migrate(src, dst) }

// ShowState is loc as messages show it: a PostgreSQL URL without its password.
func ShowState(loc string) string { return state.Display(loc) }
