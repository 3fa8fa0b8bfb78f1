// Package walk owns the walker: one walk of a plan (engine/plan) in the shape it is
// given (Shape), with checkpoints. A Runner's Run is one goroutine, the coordinator,
// that owns the schedule: which instances are ready (all they wait for has ended and is
// durable), the parallelism bound and each task's max_parallel, retries and their
// backoff, interrupts, "still running" lines and the end of the walk; workers run one
// attempt each and report back. Nothing starts without a confirmed lock: when the
// Checkpointer is a Leaser (a PostgreSQL state), an attempt starts only while its
// lease is held, and a walk whose state was taken over stops as on an interrupt. A group committer makes records durable in batches,
// and the console and each instance's capture hold what the walk and its tasks wrote.
// Snapshot, Log and LastLine read the walk from other goroutines while it runs.
//
// It does not own what a walk does with an instance: that is the shape's Operation,
// which the walker calls and which reaches the walk only through Walk (say a line,
// update and commit a record, release, retry, fail, ...). The walker has no mode of its
// own: whether a walk runs a plan or undoes what a run of it made is the shape's
// (engine/ops builds both, with their operations, and the orphans' walk). Nor does it own
// planning or evaluation (engine/plan), the state's format (engine/state), which only
// its Checkpointer writes, or task types (tasks), which only operations call.
package walk
