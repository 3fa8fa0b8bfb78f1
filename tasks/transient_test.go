package tasks

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// realDialError dials what the test names and returns the real error.
func realDialError(t *testing.T, network, addr string) error {
	t.Helper()
	c, err := net.DialTimeout(network, addr, time.Second)
	if err == nil {
		c.Close()
		t.Fatalf("dial %s %s succeeded", network, addr)
	}
	return err
}

func refusedAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

func TestTransientFault(t *testing.T) {
	refused := realDialError(t, "tcp", refusedAddr(t))
	missing := realDialError(t, "unix", filepath.Join(t.TempDir(), "unix.socket"))
	// A socket file nobody listens on: what a killed daemon leaves behind.
	stale := filepath.Join(t.TempDir(), "stale.socket")
	l, err := net.Listen("unix", stale)
	if err != nil {
		t.Fatal(err)
	}
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	l.Close()
	staleErr := realDialError(t, "unix", stale)
	_, httpErr := http.Get("http://" + refusedAddr(t) + "/")

	tests := []struct {
		name string
		err  error
		want string
	}{
		{"refused tcp dial", refused, "connection refused"},
		{"refused through net/http", httpErr, "connection refused"},
		{"missing unix socket", missing, "socket missing"},
		{"stale unix socket", staleErr, "connection refused"},
		{"reset", &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}, "connection reset"},
		{"broken pipe", fmt.Errorf("push: %w", syscall.EPIPE), "broken pipe"},
		{"EOF", fmt.Errorf("get: %w", io.EOF), "connection closed (EOF)"},
		{"unexpected EOF", io.ErrUnexpectedEOF, "connection closed (EOF)"},
		{"timeout", &net.OpError{Op: "dial", Net: "tcp", Err: timeoutErr{}}, "timeout"},
		{"flattened reset", errors.New(`Get "http://unix.socket/1.0": read unix @->/var/lib/lxd/unix.socket: read: connection reset by peer`), "connection reset"},
		{"flattened EOF", errors.New(`Post "http://unix.socket/1.0/instances": EOF`), "connection closed (EOF)"},
		{"websocket dropped", errors.New("websocket: close 1006 (abnormal closure): unexpected EOF"), "websocket dropped"},
		{"flattened missing socket", errors.New("dial unix /var/lib/lxd/unix.socket: connect: no such file or directory"), "socket missing"},
		{"not found", errors.New("Instance not found"), ""},
		{"forbidden", errors.New("not authorized"), ""},
		{"missing file, not a socket", &os.PathError{Op: "open", Path: "/x", Err: syscall.ENOENT}, ""},
		{"cancelled", context.Canceled, ""},
		{"deadline", fmt.Errorf("wait: %w", context.DeadlineExceeded), ""},
		{"nil", nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := TransientFault(tt.err); got != tt.want {
				t.Errorf("TransientFault(%v) = %q, want %q", tt.err, got, tt.want)
			}
		})
	}
}

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

func TestRetryTransient(t *testing.T) {
	defer func(w struct{ first, cap time.Duration }) { transientWaits = w }(transientWaits)
	transientWaits.first, transientWaits.cap = 10*time.Millisecond, 40*time.Millisecond
	reset := fmt.Errorf("create instance %q: %w", "x", syscall.ECONNRESET)

	tests := []struct {
		name      string
		bound     time.Duration
		errs      []error // the attempts' errors, in order; then success
		wantErr   string
		wantTries int
		wantLines int
	}{
		{"succeeds at once", 0, nil, "", 1, 0},
		{"two faults then success", 0, []error{reset, io.EOF}, "", 3, 2},
		{"not transient fails at once", 0, []error{errors.New("Instance not found"), reset}, "Instance not found", 1, 0},
		{"disabled", -1, []error{reset}, "connection reset", 1, 0},
		{"bound reached", 50 * time.Millisecond, []error{reset, reset, reset, reset, reset, reset}, "retried for", 3, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stderr bytes.Buffer
			env := &Env{Stderr: &stderr, TransientRetry: tt.bound}
			tries := 0
			v, err := RetryTransient(context.Background(), env, TransientFault, func() (int, error) {
				tries++
				if tries <= len(tt.errs) {
					return 0, tt.errs[tries-1]
				}
				return 42, nil
			})
			switch {
			case tt.wantErr == "" && (err != nil || v != 42):
				t.Errorf("= %d, %v; want 42, nil", v, err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("error %v, want one containing %q", err, tt.wantErr)
			}
			if tries != tt.wantTries {
				t.Errorf("%d attempts, want %d", tries, tt.wantTries)
			}
			lines := strings.Count(stderr.String(), "\n")
			if lines != tt.wantLines || (lines > 0 && !strings.HasPrefix(stderr.String(), "transient fault: connection reset; retry 1 in 10ms")) {
				t.Errorf("printed %d lines, want %d:\n%s", lines, tt.wantLines, stderr.String())
			}
		})
	}
}

func TestRetryTransientCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	tries := 0
	_, err := RetryTransient(ctx, &Env{Stderr: io.Discard}, TransientFault, func() (int, error) {
		tries++
		cancel()
		return 0, syscall.ECONNRESET
	})
	if tries != 1 || !errors.Is(err, syscall.ECONNRESET) {
		t.Errorf("after cancel: %d attempts, %v; want 1 and the attempt's error", tries, err)
	}
}
