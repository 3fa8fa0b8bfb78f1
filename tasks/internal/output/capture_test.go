package output

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestTeeString(t *testing.T) {
	tests := []struct {
		name    string
		writes  []string
		wantLen int
	}{
		{"small", []string{" a ", "b\n"}, 3},
		{"cut inside a rune", []string{"a", strings.Repeat("é", CaptureLimit)}, CaptureLimit - 1},
		{"invalid bytes replaced", []string{"x\xffy"}, len("x\uFFFDy")},
		{"replacement kept under the cap", []string{strings.Repeat("\xff", CaptureLimit)}, len("\uFFFD")},
		{"many writes past the cap", []string{strings.Repeat("z", CaptureLimit-1), "zz", "zzz"}, CaptureLimit},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var streamed bytes.Buffer
			c := NewCapture(&streamed)
			n := 0
			for _, w := range tt.writes {
				if got, err := c.Write([]byte(w)); got != len(w) || err != nil {
					t.Fatalf("Write = %d, %v; want %d, nil", got, err, len(w))
				}
				n += len(w)
			}
			s := c.String()
			if len(s) != tt.wantLen || !utf8.ValidString(s) || len(c.buf) > CaptureLimit {
				t.Errorf("String() has %d bytes (valid UTF-8: %v, buffered %d), want %d", len(s), utf8.ValidString(s), len(c.buf), tt.wantLen)
			}
			if streamed.Len() != n {
				t.Errorf("streamed %d bytes, want %d", streamed.Len(), n)
			}
		})
	}
}
