package process

import (
	"context"
	"strings"
	"syscall"
	"testing"

	"github.com/flowdev/flow/tasks/taskstest"
)

// TestProbe: the refresh of a process task finds it running, then reports it gone
// once it was killed behind flow's back (issue 20).
func TestProbe(t *testing.T) {
	p := newProcess(t, "sleep", "300")
	out, printed, err := run(context.Background(), t, p)
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, printed)
	}
	env, _ := taskstest.NewEnv(t)
	if got, err := p.Probe(context.Background(), env, out); err != nil || got != "" {
		t.Fatalf("Probe of the running process = %q, %v; want no drift", got, err)
	}
	pid := outPID(t, out)
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	waitDead(t, pid)
	if got, err := p.Probe(context.Background(), env, out); err != nil || !strings.HasSuffix(got, "no longer runs") {
		t.Errorf("Probe after the kill = %q, %v; want ... no longer runs", got, err)
	}
}
