// Package engine owns a flow's execution: loading it into a plan in one call (Load:
// files, variables, scope, instances and their graph), running the plan with
// checkpoints (Runner), previewing what a resume would do (Plan.Preview), selecting
// part of it (Plan.Select for --target), keeping the run record (StartRun,
// ResumeRun, FinishRun: status, variables, outputs), and undoing what a run created
// (Destruction).
//
// It does not own HCL parsing and evaluation rules (engine/config), the state file's
// format and locking (engine/state), task types (tasks and its subpackages, reached
// only through the registry it is given), nor flags, signals, the live socket or
// printing (cmd/flow/cli).
package engine
