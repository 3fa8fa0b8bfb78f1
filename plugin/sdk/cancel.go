package sdk

import (
	"context"
	"sync"
	"time"

	pluginpb "github.com/flowdev/flow/plugin/proto"
)

// runs are the contexts of the Run and Destroy calls in progress, by run id, so Cancel
// can end one while its stream stays open for the result.
type runs struct {
	mu      sync.Mutex
	cancels map[string]context.CancelFunc
	early   map[string]bool // cancelled before the call arrived
}

// start returns the context a task runs in: parent (the stream's), with req's
// deadline, cancelled at once when req or an early Cancel says so.
func (r *runs) start(parent context.Context, req *pluginpb.TaskRequest) (context.Context, func()) {
	ctx, cancel := context.WithCancel(parent)
	if d := req.GetDeadlineUnixNano(); d != 0 {
		var cancelDeadline context.CancelFunc
		ctx, cancelDeadline = context.WithDeadline(ctx, time.Unix(0, d))
		inner := cancel
		cancel = func() { cancelDeadline(); inner() }
	}
	id := req.GetRunId()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cancels == nil {
		r.cancels, r.early = map[string]context.CancelFunc{}, map[string]bool{}
	}
	if req.GetCancelled() || r.early[id] {
		delete(r.early, id)
		cancel()
	}
	if id != "" {
		r.cancels[id] = cancel
	}
	return ctx, func() {
		cancel()
		r.mu.Lock()
		delete(r.cancels, id)
		r.mu.Unlock()
	}
}

// cancel ends the call with id, or the one that arrives with it later.
func (r *runs) cancel(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if c, ok := r.cancels[id]; ok {
		c()
		return
	}
	if r.early == nil {
		r.cancels, r.early = map[string]context.CancelFunc{}, map[string]bool{}
	}
	if len(r.early) < 10000 {
		r.early[id] = true
	}
}

// Cancel cancels the context of a Run or Destroy.
func (s *Server) Cancel(_ context.Context, req *pluginpb.CancelRequest) (*pluginpb.CancelResponse, error) {
	s.runs.cancel(req.GetRunId())
	return &pluginpb.CancelResponse{}, nil
}
