package lxd

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"strings"
	"sync"
	"syscall"
	"time"

	lxdclient "github.com/canonical/lxd/client"
	"github.com/canonical/lxd/shared/api"
	"github.com/gorilla/websocket"
	"github.com/hashicorp/go-hclog"
)

// execStopGrace is how long a cancelled command has to exit after SIGTERM
// before it gets SIGKILL.
var execStopGrace = 10 * time.Second

// execKillWait bounds the wait for the streams to end after SIGKILL; then Run
// returns anyway and leaves whatever still runs to LXD.
const execKillWait = 2 * time.Second

// controlWait bounds the wait for the control connection, which the client
// hands over from a goroutine of its own.
const controlWait = time.Second

// markerEnv names the environment variable that marks every process of one
// command, so that a cancelled run can find the children LXD does not signal.
const markerEnv = "FLOW_EXEC_ID"

// execRun is one command started in an instance through LXD's exec API.
type execRun struct {
	remote   map[string]string
	instance string
	marker   string // value of markerEnv in the command's environment
	op       lxdclient.Operation
	dataDone chan bool            // closed by the client when stdout and stderr ended
	control  chan *websocket.Conn // receives the control connection once
	outputs  [2]*gatedWriter      // stdout, stderr
}

// startExec starts req in instance, streaming its output to stdout and stderr
// and feeding it stdin. The command starts only once every stream is attached.
func startExec(srv lxdclient.InstanceServer, remote map[string]string, instance string, req api.InstanceExecPost, stdin string, stdout, stderr io.Writer) (*execRun, error) {
	r := &execRun{
		remote:   remote,
		instance: instance,
		marker:   newMarker(),
		dataDone: make(chan bool),
		control:  make(chan *websocket.Conn, 1),
		outputs:  [2]*gatedWriter{{w: stdout}, {w: stderr}},
	}
	req.Environment = maps.Clone(req.Environment)
	if req.Environment == nil {
		req.Environment = map[string]string{}
	}
	req.Environment[markerEnv] = r.marker
	op, err := srv.ExecInstance(instance, req, &lxdclient.InstanceExecArgs{
		Stdin:    strings.NewReader(stdin), // at its end the client closes stdin: the command sees EOF
		Stdout:   r.outputs[0],
		Stderr:   r.outputs[1],
		Control:  func(c *websocket.Conn) { r.control <- c },
		DataDone: r.dataDone,
	})
	if err != nil {
		return nil, err
	}
	r.op = op
	return r, nil
}

// wait waits for the command to end and all its output to arrive and returns
// its exit code. When ctx ends first it stops the command (see stop) and
// returns -1. Either way, no output is written after wait returns.
func (r *execRun) wait(ctx context.Context, log hclog.Logger) (int, error) {
	if log == nil {
		log = hclog.NewNullLogger()
	}
	defer r.outputs[1].close()
	defer r.outputs[0].close()
	select {
	case <-r.dataDone:
	case <-ctx.Done():
		r.stop(log)
		return -1, nil
	}
	dropped, err := waitOperation(ctx, r.op)
	if ctx.Err() != nil {
		r.stop(log)
		return -1, nil
	}
	r.closeControl()
	code, ok := r.op.Get().Metadata["return"].(float64)
	switch {
	case dropped && (!ok || int(code) == killedByLXD):
		// LXD SIGKILLs a command whose websockets went away: that exit code is
		// the drop's, not the command's.
		return -1, errExecCut
	case err != nil && err.Error() == "Command not found": // LXD's words when the program is missing
		return 127, errProgramNotFound
	case err != nil:
		return -1, err
	case !ok:
		return -1, errors.New("LXD reported no exit code")
	}
	return int(code), nil
}

// killedByLXD is the exit code of a command LXD SIGKILLed (128 + 9).
const killedByLXD = 137

// errExecCut is what wait returns when the daemon went away while the command
// ran and killed it: a transient fault, so the task runs the command again.
var errExecCut = errors.New("the command was killed when its LXD connection dropped")

// errProgramNotFound is what wait returns when the instance has no such program.
var errProgramNotFound = errors.New("not found")

// stop sends SIGTERM, and after execStopGrace SIGKILL, to the command's main
// process through the control connection (the only process LXD signals) and
// to every process carrying the command's marker (see sweep). It returns once
// the output streams end, or execKillWait after SIGKILL.
func (r *execRun) stop(log hclog.Logger) {
	ctl := r.controlConn()
	if ctl != nil {
		defer ctl.Close()
	}
	for _, step := range []struct {
		sig  syscall.Signal
		wait time.Duration
	}{{syscall.SIGTERM, execStopGrace}, {syscall.SIGKILL, execKillWait}} {
		log.Debug("cancelled; signalling the command", "signal", step.sig)
		if ctl != nil {
			_ = ctl.SetWriteDeadline(time.Now().Add(controlWait))
			if err := ctl.WriteJSON(api.InstanceExecControl{Command: "signal", Signal: int(step.sig)}); err != nil {
				log.Debug("main process not signalled (it may have exited)", "signal", step.sig, "error", err)
			}
		}
		if err := r.sweep(step.sig); err != nil {
			log.Debug("processes of the command not signalled", "signal", step.sig, "error", err)
		}
		select {
		case <-r.dataDone:
			return
		case <-time.After(step.wait):
		}
	}
	log.Debug("command output still open after SIGKILL; returning anyway")
}

// sweepScript signals every process whose environment holds the marker line;
// it needs /bin/sh, grep and /proc in the instance.
const sweepScript = `for d in /proc/[0-9]*; do grep -qxzF "$1" "$d/environ" 2>/dev/null && kill -%d "${d#/proc/}" 2>/dev/null; done; true`

// sweep signals the command's children, which inherit its marker, over a
// fresh connection (the task's own is bound to the cancelled context). The
// sweep's own environment lacks the marker, so it does not signal itself.
func (r *execRun) sweep(sig syscall.Signal) error {
	ctx, cancel := context.WithTimeout(context.Background(), cancelGrace)
	defer cancel()
	srv, err := connect(ctx, r.remote)
	if err != nil {
		return err
	}
	op, err := srv.ExecInstance(r.instance, api.InstanceExecPost{
		Command:   []string{"/bin/sh", "-c", fmt.Sprintf(sweepScript, int(sig)), "sweep", markerEnv + "=" + r.marker},
		WaitForWS: true,
	}, &lxdclient.InstanceExecArgs{Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: io.Discard})
	if err != nil {
		return err
	}
	return op.WaitContext(ctx)
}

// newMarker returns a random marker value.
func newMarker() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b) // never fails on Linux
	return hex.EncodeToString(b)
}

func (r *execRun) controlConn() *websocket.Conn {
	select {
	case c := <-r.control:
		return c
	case <-time.After(controlWait):
		return nil
	}
}

func (r *execRun) closeControl() {
	select {
	case c := <-r.control:
		c.Close()
	default:
	}
}

// gatedWriter passes writes on until it is closed, then drops them, so a
// command's output streams cannot write into a Capture that Run is reading.
type gatedWriter struct {
	mu     sync.Mutex
	w      io.Writer
	closed bool
}

func (g *gatedWriter) Write(p []byte) (int, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.closed {
		g.w.Write(p) // a Capture's Write never fails
	}
	return len(p), nil
}

func (g *gatedWriter) close() {
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
}
