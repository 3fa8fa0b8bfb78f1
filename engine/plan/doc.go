// Package plan is flow's planner: it turns a flow into a Plan, the instances a run
// walks and the graph of what each reads. Load reads a flow (engine/config), assigns
// its variables and plans it in one call, reporting every phase's diagnostics without
// repeats; NewPlan expands for_each in the root flow and in each module instance,
// resolves each reference to the instances it reads, rejects cycles and type-checks
// what is known before a run. A Plan also evaluates one instance against its
// dependencies' values (EvalContext, Evaluate), fingerprints its inputs, evaluates the
// flow's outputs and selects instances for --target.
//
// It does not own parsing and the rules of expressions (engine/config), walking a
// plan (engine/walk), running or undoing a task, or records (engine/ops), nor the state
// (engine/state).
// A Plan is read-only once NewPlan returns and safe for concurrent use.
package plan
