// Package karmada owns the task types that drive the karmadactl binary:
// karmadactl_init (a Karmada control plane on a host cluster), karmadactl_join
// (a member in Push mode), karmadactl_token (a bootstrap token and the register
// command that uses it) and karmadactl_register (a member in Pull mode).
//
// Each type maps its typed attributes to karmadactl flags through one flag table
// (flags.go), so flow never emits a flag that is not in a table, and the tests
// check every table against the --help of the pinned karmadactl (KarmadaVersion
// in kubetest). Run first checks that the binary is the version the tables were
// checked against. karmadactl runs as the exec task type runs a command: in its
// own process group, stopped when the context is cancelled, its output streamed,
// except where it carries secrets (token create prints nothing; register prints
// its output with the token replaced).
//
// Idempotency is decided here, with client-go, before karmadactl runs: a
// complete control plane (kubeconfig, healthy API server serving the cluster API,
// every host workload ready), a Cluster object with the member's identity and
// endpoint, and a running karmada-agent are each reported as "already present" and
// left alone. Less than that is repaired: a half-done init is removed and
// installed again, a stale Cluster is unjoined and joined again, and a wrong
// endpoint, missing controller-manager arguments or agent server are patched.
//
// It does not own the clusters themselves, waiting for readiness (package wait)
// or applying manifests (package kube).
package karmada
