package output

import (
	"io"
	"strings"
	"unicode/utf8"

	"github.com/zclconf/go-cty/cty"

	"github.com/flowdev/flow/tasks"
)

// CaptureLimit bounds each captured output: the first 64 KiB are kept.
const CaptureLimit = 64 << 10

// Capture streams everything written to it on to a stream and keeps the first
// CaptureLimit bytes, for tasks that publish a command's output as outputs. A stream
// write error stops streaming but never the writer: Write always succeeds. It is not
// safe for concurrent writes; give each output its own Capture.
type Capture struct {
	stream    io.Writer
	err       error // first stream error
	buf       []byte
	truncated bool
	sensitive bool
}

// NewCapture returns a Capture streaming to stream; nil streams nowhere.
func NewCapture(stream io.Writer) *Capture {
	if stream == nil {
		stream = io.Discard
	}
	return &Capture{stream: stream}
}

// NewSensitiveCapture returns a Capture that streams nothing, for output that is
// itself a secret (a kubeconfig, a join token). Its Value is marked sensitive.
func NewSensitiveCapture() *Capture {
	return &Capture{stream: io.Discard, sensitive: true}
}

// NewStdoutCapture returns the capture for a command's stdout: streamed to stream,
// or, when sensitive, kept but not shown (with a line on stream saying so).
func NewStdoutCapture(stream io.Writer, sensitive bool) *Capture {
	if !sensitive {
		return NewCapture(stream)
	}
	if stream != nil {
		io.WriteString(stream, "(stdout is sensitive: captured, not shown)\n")
	}
	return NewSensitiveCapture()
}

// Value returns String as a cty string, marked with tasks.SensitiveMark when the
// capture is sensitive.
func (c *Capture) Value() cty.Value {
	v := cty.StringVal(c.String())
	if c.sensitive {
		return v.Mark(tasks.SensitiveMark)
	}
	return v
}

func (c *Capture) Write(p []byte) (int, error) {
	keep := min(len(p), CaptureLimit-len(c.buf))
	c.buf = append(c.buf, p[:keep]...)
	c.truncated = c.truncated || keep < len(p)
	if c.err == nil {
		_, c.err = c.stream.Write(p)
	}
	return len(p), nil
}

// Truncated reports whether more than CaptureLimit bytes were written.
func (c *Capture) Truncated() bool { return c.truncated }

// StreamErr returns the write error that stopped streaming, if any.
func (c *Capture) StreamErr() error { return c.err }

// String returns the capture as valid UTF-8, at most CaptureLimit bytes, trimmed of
// surrounding whitespace.
func (c *Capture) String() string {
	b := c.buf
	if c.truncated {
		b = dropPartialRune(b)
	}
	s := strings.ToValidUTF8(string(b), "\uFFFD")
	for len(s) > CaptureLimit { // replacement characters can make it longer
		_, size := utf8.DecodeLastRuneInString(s)
		s = s[:len(s)-size]
	}
	return strings.TrimSpace(s)
}

// dropPartialRune removes a multi-byte character cut off at the end of b.
func dropPartialRune(b []byte) []byte {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) {
				return b[:i]
			}
			break
		}
	}
	return b
}

// StringList is ss as a cty list of strings, empty (not null) when there are none.
func StringList(ss []string) cty.Value {
	if len(ss) == 0 {
		return cty.ListValEmpty(cty.String)
	}
	vals := make([]cty.Value, len(ss))
	for i, s := range ss {
		vals[i] = cty.StringVal(s)
	}
	return cty.ListVal(vals)
}
