package taskstest

import (
	"bytes"
	"sync"
	"testing"

	"github.com/flowdev/flow/tasks"
	"github.com/hashicorp/go-hclog"
)

// Buffer collects what a task prints. Unlike bytes.Buffer it is safe for the
// concurrent writes of a task's stdout and stderr goroutines and the test's reads.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// NewEnv returns an Env for a first attempt, addressed after the test, that discards
// logs and collects both stdout and stderr in the returned Buffer.
func NewEnv(t *testing.T) (*tasks.Env, *Buffer) {
	buf := &Buffer{}
	return &tasks.Env{
		Address: "test." + t.Name(),
		Attempt: 1,
		Stdout:  buf,
		Stderr:  buf,
		Logger:  hclog.NewNullLogger(),
	}, buf
}
