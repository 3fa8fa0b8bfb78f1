// Package engine owns a flow's execution. A Session, opened on a state, is what
// commands use: Run, Resume and Destroy decide whether a request starts a run,
// continues one or is refused (typed errors), walk a plan and write every run record;
// while one holds the state it answers other processes' reads on the state's socket;
// Preview says what a run would do; Runs, Status and Log read what was recorded, from
// the holder when there is one. Beneath it: previewing (Decisions), and the two walks
// of a plan — a run (NewRunner: each instance attempted, refreshed, replaced) and a
// destroy (NewDestroyer: the reversed graph, each instance undone from its record),
// with the orphans' walk — as shapes and operations given to the walker.
//
// It does not own the walker (engine/walk: scheduling, retries, interrupts,
// checkpoints and output, whose names Runner, Options and Result it gives its
// callers), planning (engine/plan: loading a flow into a plan, whose names
// Plan, Instance, Load and Check it gives its callers), HCL parsing and evaluation
// rules (engine/config), the state's
// format and locking (engine/state, whose records it names as RunRecord,
// InstanceRecord and Status), the socket's protocol (engine/live), task types (tasks
// and its subpackages, reached only through the registry it is given), nor flags,
// signals, the live view or printing (cmd/flow/cli).
package engine
