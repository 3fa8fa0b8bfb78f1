package state

import (
	"os"

	"golang.org/x/sys/unix"
)

// scratchFile returns an anonymous file in memory, or, where memfd_create is not
// allowed (some seccomp profiles), an unnamed temporary file.
func scratchFile() (*os.File, error) {
	fd, err := unix.MemfdCreate("flow-state", unix.MFD_CLOEXEC)
	if err != nil {
		return tempScratch()
	}
	return os.NewFile(uintptr(fd), "memfd:flow-state"), nil
}
