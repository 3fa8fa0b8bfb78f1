package host

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"time"

	pluginpb "github.com/flowdev/flow/plugin/sdk/proto"
	"github.com/flowdev/flow/tasks"
)

// CancelGrace is how long a cancelled Run or Destroy may take to send its result
// after Cancel (a plugin stopping a program waits out its own grace period, 10 s for
// exec) before flow drops the call: a plugin that hangs costs at most this.
var CancelGrace = 15 * time.Second

// stream calls a streaming method with req filled in for cancellation: the call
// does not end with ctx; when ctx ends, Cancel asks the plugin to end it, and the call
// is dropped after CancelGrace. The task's output goes to env until the result.
func (t *Task) stream(ctx context.Context, what string, rpc pluginpb.TaskPluginClient, req *pluginpb.TaskRequest,
	open func(context.Context) (eventStream, error), env *tasks.Env) (tasks.Outputs, error) {
	req.RunId = newRunID()
	if d, ok := ctx.Deadline(); ok {
		req.DeadlineUnixNano = d.UnixNano()
	}
	req.Cancelled = ctx.Err() != nil
	sctx, drop := context.WithCancel(context.WithoutCancel(ctx))
	defer drop()
	finished := make(chan struct{})
	defer close(finished)
	go func() {
		select {
		case <-finished:
			return
		case <-ctx.Done():
		}
		if ctx.Err() != context.DeadlineExceeded { // the plugin's context has the deadline
			cctx, cancel := context.WithTimeout(sctx, 5*time.Second)
			_, _ = rpc.Cancel(cctx, &pluginpb.CancelRequest{RunId: req.RunId})
			cancel()
		}
		select {
		case <-finished:
		case <-time.After(CancelGrace):
			drop()
		}
	}()
	s, err := open(sctx)
	if err != nil {
		return nil, t.typ.proc.callError(ctx, what, err)
	}
	return t.receive(ctx, what, s, env)
}

func newRunID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
