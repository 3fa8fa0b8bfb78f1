package state

import (
	"os"

	"golang.org/x/sys/unix"
)

// scratchFile returns an anonymous file in memory.
func scratchFile() (*os.File, error) {
	fd, err := unix.MemfdCreate("flow-state", unix.MFD_CLOEXEC)
	if err != nil {
		return nil, os.NewSyscallError("memfd_create", err)
	}
	return os.NewFile(uintptr(fd), "memfd:flow-state"), nil
}
