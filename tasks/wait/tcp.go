package wait

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"

	"github.com/flowdev/flow/tasks"
)

// tcpKind is ready when a TCP connection to address succeeds.
var tcpKind = kind{
	attrs:    []string{"address"},
	required: []string{"address"},
	validate: validateTCP,
	what:     func(w *WaitReady) string { return "tcp://" + w.Address },
	newProbe: func(w *WaitReady) (probe, error) { return &tcpProbe{address: w.Address}, nil },
}

// validateTCP checks that address is host:port with a numeric port; looking up names
// would not be offline.
func validateTCP(w *WaitReady) error {
	host, port, err := net.SplitHostPort(w.Address)
	if err != nil {
		var ae *net.AddrError
		if errors.As(err, &ae) { // its text repeats the address
			err = errors.New(ae.Err)
		}
		return &tasks.AttrError{Attr: "address", Err: fmt.Errorf("want host:port: %w", err)}
	}
	if host == "" {
		return &tasks.AttrError{Attr: "address", Err: errors.New("host must not be empty")}
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return &tasks.AttrError{Attr: "address", Err: fmt.Errorf("port %q must be a number from 1 to 65535", port)}
	}
	return nil
}

// tcpProbe connects and closes the connection at once.
type tcpProbe struct {
	address string
}

func (p *tcpProbe) check(ctx context.Context) (bool, string, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", p.address)
	if err != nil {
		return false, errorState(err), nil
	}
	_ = conn.Close()
	return true, "connected", nil
}

var _ probe = (*tcpProbe)(nil)
