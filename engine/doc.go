// Package engine owns a flow's execution. A Session, opened on a state file, is what
// commands use: Run, Resume and Destroy decide whether a request starts a run,
// continues one or is refused (typed errors), walk the plan and write every run
// record; Preview says what a run would do; Runs, Status and Log read what was
// recorded. Beneath it: loading a flow into a plan in one call (Load: files,
// variables, scope, instances and their graph), the one walker that runs a plan with
// checkpoints (Runner), previewing (Plan.Preview) and selecting (Plan.Select for
// --target).
//
// It does not own HCL parsing and evaluation rules (engine/config), the state file's
// format and locking (engine/state, whose records it names as RunRecord,
// InstanceRecord and Status), task types (tasks and its subpackages, reached only
// through the registry it is given), nor flags, signals, the live socket, the live
// view or printing (cmd/flow/cli).
package engine
