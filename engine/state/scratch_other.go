//go:build !linux

package state

import "os"

// scratchFile returns an unnamed temporary file.
func scratchFile() (*os.File, error) { return tempScratch() }
