package bridge

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// HostName is the plugin host's executable, looked for next to flow's own, then on
// PATH.
const HostName = "flow-plugin-host"

// FindHost returns the plugin host's path: next to flow's executable, else on PATH.
func FindHost() (string, error) {
	self, err := os.Executable()
	if err == nil {
		if resolved, rerr := filepath.EvalSymlinks(self); rerr == nil {
			self = resolved
		}
		p := filepath.Join(filepath.Dir(self), HostName)
		if st, serr := os.Stat(p); serr == nil && !st.IsDir() {
			return p, nil
		}
	}
	if p, perr := exec.LookPath(HostName); perr == nil {
		return p, nil
	}
	where := "flow's directory"
	if err == nil {
		where = filepath.Dir(self)
	}
	return "", fmt.Errorf("the plugin host %s is neither in %s nor on PATH: build it with `make build` (or `go build -o %s ./cmd/flow-plugin-host`) and keep it next to flow",
		HostName, where, filepath.Join(where, HostName))
}

// hostProc is a running flow-plugin-host and the calls in flight to it.
type hostProc struct {
	cmd  *exec.Cmd
	conn *os.File
	wmu  sync.Mutex // one line at a time
	enc  *json.Encoder

	mu      sync.Mutex
	next    uint64
	pending map[uint64]*pendingCall
	dead    error // set when the connection broke; every call fails with it
	exited  chan struct{}
}

type pendingCall struct {
	out  func(op string, data []byte)
	done chan *Message
}

// startHost starts the host with one end of a socket pair as its fd 3, in a process
// group of its own (a Ctrl-C reaches flow alone, which cancels the calls), killed by
// the kernel when flow dies.
func startHost(logLevel string) (*hostProc, error) {
	path, err := FindHost()
	if err != nil {
		return nil, err
	}
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		return nil, fmt.Errorf("start the plugin host: %w", err)
	}
	syscall.CloseOnExec(fds[0])
	syscall.CloseOnExec(fds[1])
	// Non-blocking, our end goes to Go's poller, so that Close ends the reader's Read
	// and the host sees the end at once; a blocking fd would stay open until it read.
	_ = syscall.SetNonblock(fds[0], true)
	ours, theirs := os.NewFile(uintptr(fds[0]), "plugin-host"), os.NewFile(uintptr(fds[1]), "plugin-host")
	cmd := exec.Command(path)
	cmd.Stderr = os.Stderr // a panic of the host's own, and its log
	if logLevel != "" {
		cmd.Env = append(os.Environ(), HostLogLevel+"="+logLevel)
	}
	cmd.ExtraFiles = []*os.File{theirs}
	setDeathSignal(cmd)
	if err := cmd.Start(); err != nil {
		ours.Close()
		theirs.Close()
		return nil, fmt.Errorf("start the plugin host %s: %w", path, err)
	}
	theirs.Close()
	h := &hostProc{cmd: cmd, conn: ours, enc: json.NewEncoder(ours), pending: map[uint64]*pendingCall{}, exited: make(chan struct{})}
	go h.read()
	go func() { _ = cmd.Wait(); close(h.exited) }()
	return h, nil
}

// read hands each message to its call until the connection ends; then every call in
// flight fails.
func (h *hostProc) read() {
	dec := json.NewDecoder(bufio.NewReader(h.conn))
	var err error
	for {
		var m Message
		if err = dec.Decode(&m); err != nil {
			break
		}
		h.mu.Lock()
		c := h.pending[m.ID]
		if m.Op == OpDone {
			delete(h.pending, m.ID)
		}
		h.mu.Unlock()
		switch {
		case c == nil:
		case m.Op == OpDone:
			c.done <- &m
		case c.out != nil:
			c.out(m.Op, m.Data)
		}
	}
	if errors.Is(err, io.EOF) || errors.Is(err, os.ErrClosed) {
		err = errors.New("the connection closed")
	}
	h.mu.Lock()
	h.dead = fmt.Errorf("the plugin host exited: %w", err)
	for id, c := range h.pending {
		delete(h.pending, id)
		c.done <- &Message{ID: id, Op: OpDone, Err: EncodeError(h.dead)}
	}
	h.mu.Unlock()
}

// call sends m and waits for its result, passing output to out. When ctx (nil: none)
// ends first, the host is told to cancel the call, which then ends as the host's
// task decides (the plugin gets its grace period).
func (h *hostProc) call(ctx context.Context, m *Message, out func(op string, data []byte)) (*Message, error) {
	c := &pendingCall{out: out, done: make(chan *Message, 1)}
	h.mu.Lock()
	if h.dead != nil {
		h.mu.Unlock()
		return nil, h.dead
	}
	h.next++
	m.ID = h.next
	h.pending[m.ID] = c
	h.mu.Unlock()
	if ctx != nil {
		if d, ok := ctx.Deadline(); ok {
			m.Deadline = d.UnixNano()
		}
		m.Cancelled = ctx.Err() != nil
	}
	if err := h.send(m); err != nil {
		h.mu.Lock()
		delete(h.pending, m.ID)
		h.mu.Unlock()
		return nil, fmt.Errorf("the plugin host: %w", err)
	}
	var done <-chan struct{}
	if ctx != nil {
		done = ctx.Done()
	}
	for {
		select {
		case res := <-c.done:
			return res, nil
		case <-done:
			done = nil
			_ = h.send(&Message{ID: m.ID, Op: OpCancel})
		}
	}
}

func (h *hostProc) send(m *Message) error {
	h.wmu.Lock()
	defer h.wmu.Unlock()
	return h.enc.Encode(m)
}

// close ends the connection, on which the host ends its plugins and exits; a host
// that has not exited after closeWait gets SIGTERM, on which it kills its plugins'
// process groups, and SIGKILL a second later.
func (h *hostProc) close() {
	_ = h.conn.Close()
	select {
	case <-h.exited:
	case <-time.After(closeWait):
		_ = h.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-h.exited:
		case <-time.After(time.Second):
			_ = h.cmd.Process.Kill()
			<-h.exited
		}
	}
}

// closeWait bounds the host's exit: its plugins get go-plugin's 2 s to shut down.
const closeWait = 10 * time.Second
