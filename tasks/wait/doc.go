// Package wait owns the wait_ready task type: polling something until it is ready (a
// TCP port that accepts connections, an HTTP endpoint that answers with an expected
// status and body, a Kubernetes API server, Nodes, a Deployment, pods, Karmada
// clusters, the clusters Karmada placed a workload on, or any object's status
// condition), reporting progress while it waits, and failing with the last observed
// state when its own wait_timeout passes.
//
// Each kind is a probe in a file of its own (tcp.go, http.go, nodes.go, ...) that
// checks once and describes what it saw; the polling loop, the progress lines and both
// deadlines (the wait's and each check's) are shared in poll.go, and what the
// Kubernetes kinds share (connection, counting, conditions) in kube.go. Adding a kind
// is one file plus one entry in kinds.
//
// It does not own retries or the engine's per-task timeout: the engine does those and
// cancels the context passed to Run. It does not own Kubernetes connections either:
// kube.RESTConfig resolves kubeconfig and context.
package wait
