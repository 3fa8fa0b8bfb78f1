package lxd

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	lxdclient "github.com/canonical/lxd/client"
	"github.com/canonical/lxd/shared/api"
	"github.com/flowdev/flow/tasks"
)

// alreadyPresent tells the user that a task found its object as declared and
// changed nothing. It is what makes a re-run after a kill visible and cheap.
func alreadyPresent(env *tasks.Env, what string) {
	fmt.Fprintf(env.Stdout, "%s already present\n", what)
}

// isNotFound reports whether err is LXD's 404.
func isNotFound(err error) bool {
	return api.StatusErrorCheck(err, http.StatusNotFound)
}

// cancelGrace bounds the best-effort cancel request sent after an interrupt.
const cancelGrace = 5 * time.Second

// waitOp waits for op with the task's context. When ctx ends first it asks the
// server to cancel the operation over a fresh connection (the task's own
// connection is bound to the cancelled ctx), then returns ctx's error. Not every
// LXD operation is cancellable; a refused cancel is ignored.
func waitOp(ctx context.Context, remote map[string]string, op lxdclient.Operation) error {
	err := waitOpEvents(ctx, op)
	if ctx.Err() == nil {
		return err
	}
	cctx, cancel := context.WithTimeout(context.Background(), cancelGrace)
	defer cancel()
	if srv, cerr := connect(cctx, remote); cerr == nil {
		if id := op.Get().ID; id != "" {
			_ = srv.DeleteOperation(id)
		}
	}
	return ctx.Err()
}

// opRecheck is how long waitOp trusts the event stream before it asks the
// server for the operation's state itself.
const opRecheck = 5 * time.Second

// waitOpEvents waits on LXD's event stream, and every opRecheck also reads the
// operation over REST: an event lost on a busy daemon must not turn a finished
// operation into a hang. When the stream drops (the daemon restarted), the
// client's operation keeps reporting that drop, so from then on the operation
// is re-read by its id (pollOperation).
func waitOpEvents(ctx context.Context, op lxdclient.Operation) error {
	_, err := waitOperation(ctx, op)
	return err
}

// waitOperation is waitOpEvents that also says whether the event stream dropped
// on the way: the daemon went away for a while, and whatever was attached to the
// operation's own websockets (an exec's streams) was cut.
func waitOperation(ctx context.Context, op lxdclient.Operation) (dropped bool, err error) {
	for {
		wctx, cancel := context.WithTimeout(ctx, opRecheck)
		err := op.WaitContext(wctx)
		cancel()
		switch {
		case ctx.Err() != nil || err == nil:
			return false, err
		case wctx.Err() == nil && transientFault(err) == "":
			return false, err // the operation failed
		case wctx.Err() == nil:
			return true, pollOperation(ctx, op) // the event stream dropped
		}
		if rerr := op.Refresh(); rerr != nil {
			if isNotFound(rerr) || transientFault(rerr) != "" {
				return true, pollOperation(ctx, op)
			}
			continue
		}
		if got := op.Get(); got.StatusCode.IsFinal() {
			if got.Err != "" {
				return false, errors.New(got.Err)
			}
			return false, nil
		}
	}
}

// settleInstance waits until no running LXD background operation touches the
// instance. A run that was killed leaves its last request running in the daemon
// (a create, a device update); the re-run must see that request's result, not
// race with it.
func settleInstance(ctx context.Context, srv lxdclient.InstanceServer, name string) error {
	want := "/1.0/instances/" + name
	for {
		ops, err := srv.GetOperations()
		if err != nil {
			return fmt.Errorf("list operations: %w", err)
		}
		busy := false
		for _, op := range ops {
			// Only background tasks (create, start, update, delete): exec and file
			// sessions of other tasks may run on the same instance for long.
			if op.Class == api.OperationClassTask && op.StatusCode == api.Running && touches(op, want) {
				busy = true
				break
			}
		}
		if !busy {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// touches reports whether op names the resource path (LXD may add ?project=).
func touches(op api.Operation, path string) bool {
	for _, rs := range op.Resources {
		for _, r := range rs {
			if r == path || strings.HasPrefix(r, path+"?") {
				return true
			}
		}
	}
	return false
}
