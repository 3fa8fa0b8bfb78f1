package lxd

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// proxyAddress is a parsed proxy device address: tcp:ADDR:PORT,
// udp:ADDR:PORT or unix:PATH.
type proxyAddress struct {
	proto   string
	address string // HOST:PORT, or the unix socket path
	port    int    // 0 for unix
}

// parseProxyAddress reads one proxy device address. Port ranges and lists,
// which LXD accepts, are refused: the task publishes one address and port.
func parseProxyAddress(s string) (proxyAddress, error) {
	proto, rest, ok := strings.Cut(s, ":")
	if !ok || rest == "" {
		return proxyAddress{}, fmt.Errorf("%q must look like tcp:127.0.0.1:8080, udp:ADDR:PORT or unix:PATH", s)
	}
	switch proto {
	case "unix":
		return proxyAddress{proto: proto, address: rest}, nil
	case "tcp", "udp":
	default:
		return proxyAddress{}, fmt.Errorf("%q: protocol %q must be tcp, udp or unix", s, proto)
	}
	host, portText, err := net.SplitHostPort(rest)
	if err != nil || host == "" {
		return proxyAddress{}, fmt.Errorf("%q must give an address and a port, e.g. %s:127.0.0.1:8080", s, proto)
	}
	if strings.ContainsAny(portText, "-,") {
		return proxyAddress{}, fmt.Errorf("%q: port ranges and lists are not supported; declare one device per port", s)
	}
	port, err := strconv.Atoi(portText)
	if err != nil || port < 1 || port > 65535 {
		return proxyAddress{}, fmt.Errorf("%q: port %q must be a number from 1 to 65535", s, portText)
	}
	return proxyAddress{proto: proto, address: net.JoinHostPort(host, portText), port: port}, nil
}

// addressInUse reports whether something already listens on the local TCP
// address. Other failures (an address this host does not have) are left for
// LXD to report.
func addressInUse(address string) bool {
	l, err := net.Listen("tcp", address)
	if err != nil {
		return errors.Is(err, syscall.EADDRINUSE)
	}
	l.Close()
	return false
}

// listenWait is how long a new proxy device has to accept connections.
const listenWait = 5 * time.Second

// waitListening retries a TCP connection to address until one succeeds,
// listenWait passes or ctx ends.
func waitListening(ctx context.Context, address string) error {
	ctx, cancel := context.WithTimeout(ctx, listenWait)
	defer cancel()
	var d net.Dialer
	for {
		conn, err := d.DialContext(ctx, "tcp", address)
		if err == nil {
			conn.Close()
			return nil
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(100 * time.Millisecond):
		}
	}
}
