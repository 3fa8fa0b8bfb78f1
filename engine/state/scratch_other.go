//go:build !linux

package state

import "os"

// scratchFile returns an unnamed temporary file.
func scratchFile() (*os.File, error) {
	f, err := os.CreateTemp("", "flow-state-*")
	if err != nil {
		return nil, err
	}
	os.Remove(f.Name()) // open, it lives on unnamed (not on Windows, where this fails)
	return f, nil
}
