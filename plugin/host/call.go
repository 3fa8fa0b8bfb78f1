package host

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sync/atomic"
	"time"

	pluginpb "github.com/flowdev/flow/plugin/sdk/proto"
	"github.com/flowdev/flow/tasks"
)

// CancelGrace is how long a cancelled Run or Destroy (Ctrl-C, or its timeout) may
// take to send its result once cancelled. Then the plugin's process group, the plugin and
// every process it started, gets SIGTERM, and SIGKILL TermGrace later: together
// within the 10 s an exec task's command gets, so one Ctrl-C ends flow as promptly.
var CancelGrace = 5 * time.Second

// TermGrace is how long the plugin's process group gets between SIGTERM and SIGKILL.
var TermGrace = 5 * time.Second

// stream calls a streaming method with req filled in for cancellation: the call
// does not end with ctx; when ctx ends, Cancel asks the plugin to end it, and after
// CancelGrace the plugin's process group is stopped, which ends the call (a plugin
// blocked on a program it started would otherwise hold it, and leave the program
// running). The task's output goes to env until the result.
func (t *Task) stream(ctx context.Context, what string, rpc pluginpb.TaskPluginClient, req *pluginpb.TaskRequest,
	open func(context.Context) (eventStream, error), env *tasks.Env) (tasks.Outputs, error) {
	req.RunId = newRunID()
	if d, ok := ctx.Deadline(); ok {
		req.DeadlineUnixNano = d.UnixNano()
	}
	req.Cancelled = ctx.Err() != nil
	pgid := t.typ.proc.pgid() // the process conn returned: a later one serves other calls
	sctx, drop := context.WithCancel(context.WithoutCancel(ctx))
	defer drop()
	finished := make(chan struct{})
	defer close(finished)
	var stopped atomic.Bool
	go func() {
		select {
		case <-finished:
			return
		case <-ctx.Done():
		}
		grace := time.NewTimer(CancelGrace)
		defer grace.Stop()
		if ctx.Err() != context.DeadlineExceeded { // the plugin's context has the deadline
			cctx, cancel := context.WithTimeout(sctx, min(CancelGrace, 5*time.Second))
			_, _ = rpc.Cancel(cctx, &pluginpb.CancelRequest{RunId: req.RunId})
			cancel()
		}
		select {
		case <-finished:
		case <-grace.C:
			stopped.Store(true)
			t.typ.proc.stopGroup(pgid, TermGrace)
			drop()
		}
	}()
	s, err := open(sctx)
	if err != nil {
		return nil, t.typ.proc.callError(ctx, what, err)
	}
	out, err := t.receive(ctx, what, s, env)
	if err == nil && stopped.Load() {
		// A result sent as its group was stopped (a plugin that ignored its program's
		// death) is no success: the task was cancelled, or timed out.
		return nil, fmt.Errorf("plugin %q: %s: %w", t.typ.proc.Name, what, ctx.Err())
	}
	return out, err
}

func newRunID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
