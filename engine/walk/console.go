package walk

import (
	"bytes"
	"io"
	"sync"
)

// maxCapture bounds what is kept of one instance's output for `flow logs`; the
// stream to the user is not bounded.
const maxCapture = 1 << 20

// console serialises whole lines from concurrent tasks onto one writer.
type console struct {
	mu  sync.Mutex
	out io.Writer
}

func (c *console) line(s string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	io.WriteString(c.out, s+"\n")
}

// capture keeps the redacted tail of one instance's output, across attempts.
type capture struct {
	mu  sync.Mutex
	buf []byte
}

func (c *capture) append(p []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.buf = append(c.buf, p...)
	if len(c.buf) > maxCapture {
		c.buf = append(c.buf[:0:0], c.buf[len(c.buf)-maxCapture:]...)
	}
}

func (c *capture) bytes() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return bytes.Clone(c.buf)
}

// lastLine returns the last non-empty line kept.
func (c *capture) lastLine() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	b := bytes.TrimRight(c.buf, "\n")
	if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
		b = b[i+1:]
	}
	return string(b)
}

// A Stream is where an attempt writes (Walk.Streams): it splits what it is given into
// lines, redacts them, keeps them in the instance's capture and writes them to the
// console prefixed with the instance's address. It may be written from several
// goroutines.
type Stream struct {
	mu      sync.Mutex
	prefix  string
	console *console // nil: captured only
	capture *capture
	redact  func(string) string
	partial []byte
}

func (w *Stream) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.partial = append(w.partial, p...)
	for {
		i := bytes.IndexByte(w.partial, '\n')
		if i < 0 {
			break
		}
		w.emit(string(w.partial[:i]))
		w.partial = w.partial[i+1:]
	}
	// A task that never writes a newline must not grow the buffer without bound.
	if len(w.partial) > 64<<10 {
		w.emit(string(w.partial))
		w.partial = w.partial[:0]
	}
	return len(p), nil
}

func (w *Stream) emit(line string) {
	line = w.redact(line)
	w.capture.append([]byte(line + "\n"))
	if w.console != nil {
		w.console.line(w.prefix + line)
	}
}

// Flush emits a final line that had no newline.
func (w *Stream) Flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.partial) > 0 {
		w.emit(string(w.partial))
		w.partial = w.partial[:0]
	}
}
