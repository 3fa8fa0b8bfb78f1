package sdk

import (
	"fmt"
	"io"
	"sync"

	pluginpb "github.com/flowdev/flow/plugin/sdk/proto"
)

// Sender serialises the events of one Run or Destroy stream: a task may write its
// stdout and stderr from two goroutines. Send is the stream's Send.
type Sender struct {
	mu   sync.Mutex
	Send func(*pluginpb.Event) error
}

// Writer is an io.Writer whose writes are stdout (or stderr) events of the stream.
func (s *Sender) Writer(stdout bool) io.Writer { return streamWriter{s: s, stdout: stdout} }

// Event sends e, after every write sent before.
func (s *Sender) Event(e *pluginpb.Event) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.Send(e)
}

type streamWriter struct {
	s      *Sender
	stdout bool
}

// Write sends a copy of p; the caller may reuse p.
func (w streamWriter) Write(p []byte) (int, error) {
	b := append([]byte(nil), p...)
	e := &pluginpb.Event{Event: &pluginpb.Event_Stderr{Stderr: b}}
	if w.stdout {
		e = &pluginpb.Event{Event: &pluginpb.Event_Stdout{Stdout: b}}
	}
	if err := w.s.Event(e); err != nil {
		return 0, fmt.Errorf("stream to flow: %w", err)
	}
	return len(p), nil
}
