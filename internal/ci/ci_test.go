package ci

import "testing"

func TestEnabled(t *testing.T) {
	for v, want := range map[string]bool{
		"":      false,
		"0":     false,
		"false": false,
		"False": false,
		"FALSE": false,
		" ":     false,
		"true":  true,
		"True":  true,
		"TRUE":  true,
		"1":     true,
		"yes":   true,
		"on":    true,
	} {
		t.Setenv("CI", v)
		if got := Enabled(); got != want {
			t.Errorf("CI=%q: Enabled() = %v, want %v", v, got, want)
		}
	}
}
