package exec

import (
	"io"
	"strings"
	"unicode/utf8"
)

// outputCap bounds each captured output: the first 64 KiB are kept.
const outputCap = 64 << 10

// tee streams everything written to it on to stream and keeps the first outputCap bytes.
// A stream write error stops streaming but never the command: Write always succeeds.
type tee struct {
	stream    io.Writer
	err       error // first stream error
	buf       []byte
	truncated bool
}

func newTee(stream io.Writer) *tee {
	if stream == nil {
		stream = io.Discard
	}
	return &tee{stream: stream}
}

func (t *tee) Write(p []byte) (int, error) {
	keep := min(len(p), outputCap-len(t.buf))
	t.buf = append(t.buf, p[:keep]...)
	t.truncated = t.truncated || keep < len(p)
	if t.err == nil {
		_, t.err = t.stream.Write(p)
	}
	return len(p), nil
}

// String returns the capture as valid UTF-8, at most outputCap bytes, trimmed of
// surrounding whitespace.
func (t *tee) String() string {
	b := t.buf
	if t.truncated {
		b = dropPartialRune(b)
	}
	s := strings.ToValidUTF8(string(b), "\uFFFD")
	for len(s) > outputCap { // replacement characters can make it longer
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
