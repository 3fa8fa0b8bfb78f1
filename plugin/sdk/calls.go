package sdk

import (
	"context"
	"sync"
	"time"

	pluginpb "github.com/flowdev/flow/plugin/sdk/proto"
)

// Calls are the contexts of the Run and Destroy calls in progress, by run id, so that
// Cancel can end one while its stream stays open for the result. The zero value is
// ready; it is safe for concurrent use. A server of its own (ServeServer) uses it for
// its Run, Destroy and Cancel.
type Calls struct {
	mu      sync.Mutex
	cancels map[string]context.CancelFunc
	early   map[string]bool // cancelled before the call arrived
}

// Start returns the context a call runs in: parent (the stream's), with req's
// deadline, cancelled at once when req or an earlier Cancel says so. done ends it.
func (r *Calls) Start(parent context.Context, req *pluginpb.TaskRequest) (ctx context.Context, done func()) {
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
	r.init()
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

// Cancel ends the call with id, or the one that arrives with it later.
func (r *Calls) Cancel(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.init()
	if c, ok := r.cancels[id]; ok {
		c()
		return
	}
	if len(r.early) < 10000 {
		r.early[id] = true
	}
}

func (r *Calls) init() {
	if r.cancels == nil {
		r.cancels, r.early = map[string]context.CancelFunc{}, map[string]bool{}
	}
}
