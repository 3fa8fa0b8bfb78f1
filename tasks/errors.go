package tasks

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/url"
	"os"
	osexec "os/exec"
	"syscall"
	"time"
)

// ErrorCause drops the operation and address layers (*url.Error, *net.OpError) of
// err, for progress lines and states whose own text already names the address.
func ErrorCause(err error) string {
	for {
		var ue *url.Error
		var oe *net.OpError
		var next error
		switch {
		case errors.As(err, &ue):
			next = ue.Err
		case errors.As(err, &oe):
			next = oe.Err
		}
		if next == nil {
			return err.Error()
		}
		err = next
	}
}

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

// RoundElapsed keeps durations readable in progress lines: milliseconds below a
// second, tenths below a minute, whole seconds above.
func RoundElapsed(d time.Duration) time.Duration {
	switch {
	case d < time.Second:
		return d.Round(time.Millisecond)
	case d < time.Minute:
		return d.Round(100 * time.Millisecond)
	default:
		return d.Round(time.Second)
	}
}
