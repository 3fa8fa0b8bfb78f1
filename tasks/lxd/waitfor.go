package lxd

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"time"

	lxdclient "github.com/canonical/lxd/client"
	"github.com/canonical/lxd/shared/api"
	"github.com/flowdev/flow/tasks"
	"github.com/flowdev/flow/tasks/internal/output"
	"github.com/gorilla/websocket"
)

// Poll settings of lxd_launch's wait_for; variables so tests can shorten them.
var (
	waitForInterval = 250 * time.Millisecond
	waitForProgress = 10 * time.Second
)

// probeStreamWait bounds the wait for a probe's output once its command ended.
const probeStreamWait = 5 * time.Second

// probeResult is one run of the wait_for command.
type probeResult struct {
	code   int    // exit code; -1 when the command could not run
	output string // stdout then stderr, or why it could not run
}

// waitReady runs wait_for inside the instance until it exits 0. It returns
// ctx's error when ctx ends, and the last output when wait_timeout passes.
func (l *Launch) waitReady(ctx context.Context, srv lxdclient.InstanceServer, env *tasks.Env) error {
	if len(l.WaitFor) == 0 {
		return nil
	}
	timeout, err := l.waitTimeout()
	if err != nil {
		return fmt.Errorf("wait_timeout: %w", err)
	}
	start := time.Now()
	waitCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	nextProgress := start.Add(waitForProgress)
	last := probeResult{code: -1, output: "no attempt finished in time"}
	for {
		res, err := probe(waitCtx, srv, l.Remote, l.Name, l.WaitFor)
		if ctx.Err() != nil {
			return fmt.Errorf("wait_for %q: %w", l.WaitFor, ctx.Err())
		}
		if err == nil && res.code == 0 {
			fmt.Fprintf(env.Stdout, "instance %q ready after %s: %q exited 0\n", l.Name, time.Since(start).Round(time.Millisecond), l.WaitFor)
			return nil
		}
		if err == nil { // a probe cut short by the deadline says nothing new
			last = res
		}
		if now := time.Now(); now.After(nextProgress) {
			fmt.Fprintf(env.Stdout, "waiting for %q in %q: %s of %s, last exit code %d\n",
				l.WaitFor, l.Name, now.Sub(start).Round(time.Second), timeout, last.code)
			nextProgress = now.Add(waitForProgress)
		}
		select {
		case <-waitCtx.Done():
			if ctx.Err() != nil {
				return fmt.Errorf("wait_for %q: %w", l.WaitFor, ctx.Err())
			}
			return &resultError{fmt.Errorf("wait_for %q did not exit 0 within %s; last exit code %d, output: %s",
				l.WaitFor, timeout, last.code, outputOrNone(last.output))}
		case <-time.After(waitForInterval):
		}
	}
}

// probe runs cmd inside the instance once, capturing its output. A command
// LXD cannot start or a failed request is a result (code -1, the reason as
// output), not an error: err is only set when ctx ends, and then the command
// is killed rather than left running.
func probe(ctx context.Context, srv lxdclient.InstanceServer, remote map[string]string, instance string, cmd []string) (probeResult, error) {
	stdout, stderr := output.NewCapture(nil), output.NewCapture(nil)
	dataDone := make(chan bool)
	control := make(chan *websocket.Conn, 1)
	op, err := srv.ExecInstance(instance, api.InstanceExecPost{Command: cmd, WaitForWS: true},
		&lxdclient.InstanceExecArgs{Stdout: stdout, Stderr: stderr, DataDone: dataDone,
			Control: func(c *websocket.Conn) { control <- c }})
	if err != nil {
		if ctx.Err() != nil {
			return probeResult{code: -1}, ctx.Err()
		}
		return probeResult{code: -1, output: err.Error()}, nil
	}
	defer endProbe(ctx, control)
	if err := waitOp(ctx, remote, op); err != nil {
		if ctx.Err() != nil {
			return probeResult{code: -1}, ctx.Err()
		}
		return probeResult{code: -1, output: err.Error()}, nil
	}
	select {
	case <-dataDone: // the captures are complete and no longer written
	case <-ctx.Done():
		return probeResult{code: -1}, ctx.Err()
	case <-time.After(probeStreamWait):
		// The command ended but its output never did: the daemon dropped the
		// stream. Another probe answers the question.
		return probeResult{code: -1, output: "the output stream dropped"}, nil
	}
	code := -1
	if ret, ok := op.Get().Metadata["return"].(float64); ok {
		code = int(ret)
	}
	output := strings.TrimSpace(stdout.String() + "\n" + stderr.String())
	return probeResult{code: code, output: output}, nil
}

// endProbe closes a probe's control connection. When ctx ended first it kills
// the command through it: LXD leaves an abandoned exec running, with its
// streams (and the client's goroutines) open until it exits by itself.
func endProbe(ctx context.Context, control <-chan *websocket.Conn) {
	var c *websocket.Conn
	select {
	case c = <-control:
	case <-time.After(controlWait):
		return
	}
	defer c.Close()
	if ctx.Err() != nil {
		_ = c.SetWriteDeadline(time.Now().Add(controlWait))
		_ = c.WriteJSON(api.InstanceExecControl{Command: "signal", Signal: int(syscall.SIGKILL)})
	}
}

func outputOrNone(output string) string {
	if output == "" {
		return "(none)"
	}
	return output
}
