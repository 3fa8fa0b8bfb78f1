package command

import (
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// readBufs are shared across tasks: without them every process would cost two fresh
// 32 KiB copy buffers, the largest allocation of a run of many short commands.
var readBufs = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// outputPipes connects a process's stdout and stderr to two Captures through pipes that
// Run owns, so it decides how long to keep reading after the process exits.
type outputPipes struct {
	readers  [2]*os.File
	writers  [2]*os.File
	open     atomic.Int32  // readers not at end of file yet
	finished chan struct{} // closed when open reaches 0
}

func newOutputPipes() (*outputPipes, error) {
	p := &outputPipes{finished: make(chan struct{})}
	for i := range p.readers {
		r, w, err := outputPipe()
		if err != nil {
			p.closeAll()
			return nil, fmt.Errorf("create output pipe: %w", err)
		}
		p.readers[i], p.writers[i] = r, w
	}
	return p, nil
}

// outputPipe is os.Pipe with only the read end in Go's poller: the write end goes to
// the child and is closed here unused, so registering it, making it non-blocking and
// blocking again for the child (as os.Pipe and os/exec do) is wasted system calls.
func outputPipe() (r, w *os.File, err error) {
	var fds [2]int
	if err := syscall.Pipe2(fds[:], syscall.O_CLOEXEC); err != nil {
		return nil, nil, os.NewSyscallError("pipe2", err)
	}
	if err := syscall.SetNonblock(fds[0], true); err != nil {
		syscall.Close(fds[0])
		syscall.Close(fds[1])
		return nil, nil, os.NewSyscallError("fcntl", err)
	}
	// NewFile puts a non-blocking descriptor in the poller, so the read end's Close
	// still ends a pending Read (see drain); a blocking one it leaves alone.
	return os.NewFile(uintptr(fds[0]), "|0"), os.NewFile(uintptr(fds[1]), "|1"), nil
}

// start copies each pipe into its Capture; call it once the child holds the write ends.
func (p *outputPipes) start(stdout, stderr io.Writer) {
	for _, w := range p.writers {
		w.Close()
	}
	p.open.Store(int32(len(p.readers)))
	for i, dst := range []io.Writer{stdout, stderr} {
		go func(r *os.File) {
			defer func() {
				if p.open.Add(-1) == 0 {
					close(p.finished)
				}
			}()
			buf := readBufs.Get().(*[]byte)
			defer readBufs.Put(buf)
			for {
				n, err := r.Read(*buf)
				if n > 0 {
					dst.Write((*buf)[:n]) // a Capture's Write never fails
				}
				if err != nil {
					return
				}
			}
		}(p.readers[i])
	}
}

// drain waits until both pipes reach end of file or, when a process the command left
// behind keeps them open, for at most grace; then it stops reading. It reports whether
// it had to stop early.
func (p *outputPipes) drain(grace time.Duration) (cutShort bool) {
	select {
	case <-p.finished: // the usual case: no timer
	default:
		timer := time.NewTimer(grace)
		select {
		case <-p.finished:
		case <-timer.C:
			cutShort = true
			for _, r := range p.readers {
				r.Close() // unblocks the pending Read
			}
			<-p.finished
		}
		timer.Stop()
	}
	p.closeAll()
	return cutShort
}

// closeAll closes every end; closing one twice is harmless (os.ErrClosed).
func (p *outputPipes) closeAll() {
	for _, f := range append(p.readers[:], p.writers[:]...) {
		if f != nil {
			f.Close()
		}
	}
}
