package command

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// readBufs are shared across tasks: without them every process would cost two fresh
// 32 KiB copy buffers, the largest allocation of a run of many short commands.
var readBufs = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// outputPipes connects a process's stdout and stderr to two Captures through pipes that
// Run owns, so it decides how long to keep reading after the process exits.
type outputPipes struct {
	readers [2]*os.File
	writers [2]*os.File
	done    sync.WaitGroup
}

func newOutputPipes() (*outputPipes, error) {
	p := &outputPipes{}
	for i := range p.readers {
		r, w, err := os.Pipe()
		if err != nil {
			p.closeAll()
			return nil, fmt.Errorf("create output pipe: %w", err)
		}
		p.readers[i], p.writers[i] = r, w
	}
	return p, nil
}

// start copies each pipe into its Capture; call it once the child holds the write ends.
func (p *outputPipes) start(stdout, stderr io.Writer) {
	for _, w := range p.writers {
		w.Close()
	}
	for i, dst := range []io.Writer{stdout, stderr} {
		p.done.Add(1)
		go func(r *os.File) {
			defer p.done.Done()
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
	finished := make(chan struct{})
	go func() { p.done.Wait(); close(finished) }()
	timer := time.NewTimer(grace)
	defer timer.Stop()
	select {
	case <-finished:
	case <-timer.C:
		cutShort = true
		for _, r := range p.readers {
			r.Close() // unblocks the pending Read
		}
		<-finished
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
