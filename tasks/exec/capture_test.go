package exec

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
		{"cut inside a rune", []string{"a", strings.Repeat("é", outputCap)}, outputCap - 1},
		{"invalid bytes replaced", []string{"x\xffy"}, len("x\uFFFDy")},
		{"replacement kept under the cap", []string{strings.Repeat("\xff", outputCap)}, len("\uFFFD")},
		{"many writes past the cap", []string{strings.Repeat("z", outputCap-1), "zz", "zzz"}, outputCap},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var streamed bytes.Buffer
			tee := newTee(&streamed)
			n := 0
			for _, w := range tt.writes {
				if got, err := tee.Write([]byte(w)); got != len(w) || err != nil {
					t.Fatalf("Write = %d, %v; want %d, nil", got, err, len(w))
				}
				n += len(w)
			}
			s := tee.String()
			if len(s) != tt.wantLen || !utf8.ValidString(s) || len(tee.buf) > outputCap {
				t.Errorf("String() has %d bytes (valid UTF-8: %v, buffered %d), want %d", len(s), utf8.ValidString(s), len(tee.buf), tt.wantLen)
			}
			if streamed.Len() != n {
				t.Errorf("streamed %d bytes, want %d", streamed.Len(), n)
			}
		})
	}
}
