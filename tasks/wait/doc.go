// Package wait owns the wait_ready task type: polling something until it is ready (a
// TCP port that accepts connections, an HTTP endpoint that answers with an expected
// status and body), reporting progress while it waits, and failing with the last
// observed state when its own wait_timeout passes.
//
// Each kind is a probe in a file of its own (tcp.go, http.go) that checks once and
// describes what it saw; the polling loop, the progress lines and both deadlines (the
// wait's and each check's) are shared in poll.go. Adding a kind is one file plus one
// entry in kinds.
//
// It does not own retries or the engine's per-task timeout: the engine does those and
// cancels the context passed to Run.
package wait
