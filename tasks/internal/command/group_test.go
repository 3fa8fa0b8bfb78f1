package command

import "testing"

func TestParseStat(t *testing.T) {
	tests := []struct {
		stat      string
		wantState byte
		wantPgrp  int
		wantOK    bool
	}{
		{"123 (sleep) S 1 120 120 0 -1", 'S', 120, true},
		{"7 (a) b (c)) Z 1 7 7 0", 'Z', 7, true},
		{"7 (x y) R 1", 0, 0, false},
		{"garbage", 0, 0, false},
	}
	for _, tt := range tests {
		state, pgrp, ok := parseStat([]byte(tt.stat))
		if state != tt.wantState || pgrp != tt.wantPgrp || ok != tt.wantOK {
			t.Errorf("parseStat(%q) = %q, %d, %v; want %q, %d, %v", tt.stat, state, pgrp, ok, tt.wantState, tt.wantPgrp, tt.wantOK)
		}
	}
}
