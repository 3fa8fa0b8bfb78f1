// Package engine owns the Session: one command's use of a flow's state. Run, Resume
// and Destroy decide, by one table (basis.go), whether a request starts a run,
// continues one or is refused (typed errors), hold the state, load the flow, walk it
// with the operations and record how the walk ended; while a session holds the state
// it answers other processes' reads on the state's socket; Preview and PreviewDestroy
// say what a run or a destroy would do; Runs, Status and Log read what was recorded,
// from the holder when there is one. Its names files give its callers the names of
// the packages beneath it, so that a caller of the engine imports one package.
//
// It does not own what a walk does with each instance, the previews' decisions or
// the run records' writing and reading (engine/ops: NewRunner, NewDestroyer, the
// orphans' walk, Decisions), the walker (engine/walk: scheduling, retries, interrupts,
// checkpoints and output, whose names Runner, Options and Result it gives its
// callers), planning (engine/plan: loading a flow into a plan, whose names Plan,
// Instance, Load and Check it gives its callers), HCL parsing and evaluation rules
// (engine/config), the state's format and locking (engine/state, whose records it
// names as RunRecord, InstanceRecord and Status), the socket's protocol
// (engine/live), task types (tasks and its subpackages, reached only through the
// registry it is given), nor flags, signals, the live view or printing
// (cmd/flow/cli).
package engine
