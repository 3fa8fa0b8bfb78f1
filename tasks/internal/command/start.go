package command

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	osexec "os/exec"
	"syscall"
)

// StartCause explains why starting a program in dir failed, for callers that
// prefix it with `start "prog": `. It drops os/exec's "exec: NAME:" prefix, and
// blames a missing or non-directory dir instead of the program, which is what
// fork/exec's message does.
func StartCause(dir string, err error) error {
	var ee *osexec.Error
	if errors.As(err, &ee) {
		err = ee.Err
	}
	if dir != "" {
		var pe *fs.PathError
		if fi, serr := os.Stat(dir); errors.As(serr, &pe) {
			err = fmt.Errorf("dir %s: %w", dir, pe.Err)
		} else if serr == nil && !fi.IsDir() {
			err = fmt.Errorf("dir %s: %w", dir, syscall.ENOTDIR)
		}
	}
	return err
}
