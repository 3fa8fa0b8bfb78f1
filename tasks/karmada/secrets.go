package karmada

import (
	"bytes"
	"io"
	"strings"
)

// hidden replaces a secret wherever flow prints or reports it.
const hidden = "(sensitive)"

// redact replaces every occurrence of each non-empty secret in s.
func redact(s string, secrets ...string) string {
	for _, secret := range secrets {
		if secret != "" {
			s = strings.ReplaceAll(s, secret, hidden)
		}
	}
	return s
}

// redactingWriter passes whole lines on with secrets replaced, so that a secret
// split across two writes is still caught. Close writes a last unterminated
// line. Like a Capture, it is for one stream and not safe for concurrent writes.
type redactingWriter struct {
	out     io.Writer
	secrets []string
	partial []byte
}

func newRedactingWriter(out io.Writer, secrets ...string) *redactingWriter {
	if out == nil {
		out = io.Discard
	}
	return &redactingWriter{out: out, secrets: secrets}
}

func (w *redactingWriter) Write(p []byte) (int, error) {
	w.partial = append(w.partial, p...)
	if i := bytes.LastIndexByte(w.partial, '\n'); i >= 0 {
		lines := string(w.partial[:i+1])
		w.partial = append(w.partial[:0], w.partial[i+1:]...)
		// As with a Capture, a stream error must not stop the command.
		_, _ = io.WriteString(w.out, redact(lines, w.secrets...))
	}
	return len(p), nil
}

// Close writes what is left after the last newline.
func (w *redactingWriter) Close() error {
	if len(w.partial) > 0 {
		_, err := io.WriteString(w.out, redact(string(w.partial), w.secrets...))
		w.partial = nil
		return err
	}
	return nil
}
