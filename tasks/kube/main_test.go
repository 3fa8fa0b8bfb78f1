package kube

import (
	"testing"

	"github.com/flowdev/flow/tasks"
	"github.com/flowdev/flow/tasks/kube/kubetest"
	"github.com/flowdev/flow/tasks/taskstest"
)

// serverTest is a test against the package's shared kube-apiserver. Each uses
// names (files, namespaces, objects) of its own, so they cannot interfere.
type serverTest struct {
	name string
	run  func(t *testing.T, s *kubetest.Server)
}

// TestAPIServer starts one real etcd + kube-apiserver (seconds) and runs every
// test that needs a server against it: -run 'TestAPIServer/apply' picks some.
func TestAPIServer(t *testing.T) {
	s := kubetest.Start(t, kubetest.Options{})
	var all []serverTest
	all = append(all, kubeconfigServerTests...)
	all = append(all, applyServerTests...)
	for _, st := range all {
		t.Run(st.name, func(t *testing.T) { st.run(t, s) })
	}
}

// runTask validates and runs task like the engine does and returns its outputs,
// everything it printed, and its error.
func runTask(t *testing.T, task tasks.Task) (tasks.Outputs, string, error) {
	t.Helper()
	if err := task.Validate(); err != nil {
		t.Fatalf("Validate() = %v", err)
	}
	env, buf := taskstest.NewEnv(t)
	out, err := task.Run(t.Context(), env)
	return out, buf.String(), err
}

// mustRun is runTask for runs that must succeed.
func mustRun(t *testing.T, task tasks.Task) (tasks.Outputs, string) {
	t.Helper()
	out, printed, err := runTask(t, task)
	if err != nil {
		t.Fatalf("Run() = %v; printed:\n%s", err, printed)
	}
	return out, printed
}
