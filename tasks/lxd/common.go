package lxd

import (
	"context"
	"fmt"
	"net/http"
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
	err := op.WaitContext(ctx)
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
