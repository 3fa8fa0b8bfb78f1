// Package progress holds what progress lines and task states say about time and
// errors: elapsed times rounded to stay readable, and an error's cause without the
// layers that repeat the address.
package progress

import (
	"errors"
	"net"
	"net/url"
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
