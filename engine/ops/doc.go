// Package ops owns what a walk does to one instance, and the records around it: run
// it (runOp: an attempt, trusting a previous success, refreshing it, replacing it, the
// object it records), undo it (undoOp over the reversed graph, and the orphans' walk of
// what the flow no longer has), probe it (a preview's refresh), say what a run or a
// destroy would do (Decisions, Preview, DestroyDecisions), write the run records (a
// run or a destroy started, resumed, finished) and read them as readers see them.
// Each operation is a walk.Operation in a walk.Shape that NewRunner, NewDestroyer or
// OrphanPass hands to the walker.
//
// It does not own the walker (engine/walk: scheduling, retries, interrupts,
// checkpoints, output), planning and evaluation (engine/plan), the state's format
// (engine/state), task types (tasks, reached only through a plan's instances and the
// registry it is given), nor deciding whether a request runs, resumes or is refused,
// holding the state or loading the flow: that is the Session's (engine), which calls
// this package and is never called by it.
package ops
