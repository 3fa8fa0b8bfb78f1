// Package process owns the process and process_stop task types: starting a long-running
// local program detached from flow (its own session, stdin from /dev/null, output
// appended to a log file) so that it outlives the run, waiting until it is ready, and
// stopping it again.
//
// A pid file ties a run to the process it started. It records the pid, the argv and
// the process's start time, so a later run recognises its process (and leaves it
// running), tells a changed command from a stale file, and never signals a process
// that merely reuses the pid.
//
// It does not own supervision: nothing restarts a process that dies after its task
// succeeded. Retries, timeouts and checkpoints belong to the engine.
package process
