package wait

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"
)

// freeAddr returns a loopback address nothing listens on (it was free a moment ago).
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return addr
}

func listen(t *testing.T, addr string) net.Listener {
	t.Helper()
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l
}

func TestTCP(t *testing.T) {
	t.Run("ready immediately", func(t *testing.T) {
		addr := listen(t, "127.0.0.1:0").Addr().String()
		out, stdout, err := run(context.Background(), t, &WaitReady{Kind: "tcp", Address: addr})
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		if e := outNumber(t, out, "elapsed"); e < 0 || e > 1 {
			t.Errorf("elapsed = %v s, want under 1", e)
		}
		if _, ok := out["status"]; ok {
			t.Errorf("tcp published an http output: %v", out)
		}
		want := "waiting for tcp://" + addr + " (up to 5m0s, checking every 1s)\ntcp://" + addr + " ready after "
		if !strings.HasPrefix(stdout, want) {
			t.Errorf("stdout = %q, want it to start with %q", stdout, want)
		}
	})

	t.Run("after a delayed listen", func(t *testing.T) {
		addr := freeAddr(t)
		listening := make(chan net.Listener, 1)
		go func() {
			time.Sleep(300 * time.Millisecond)
			l, err := net.Listen("tcp", addr)
			if err != nil {
				t.Errorf("listen again on %s: %v", addr, err)
			}
			listening <- l
		}()
		out, _, err := run(context.Background(), t, &WaitReady{Kind: "tcp", Address: addr, Interval: "50ms"})
		if l := <-listening; l != nil {
			_ = l.Close()
		}
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		if e := outNumber(t, out, "elapsed"); e < 0.3 || e > 2 {
			t.Errorf("elapsed = %v s, want between 0.3 and 2", e)
		}
	})

	t.Run("timeout names the last state", func(t *testing.T) {
		addr := freeAddr(t)
		start := time.Now()
		out, _, err := run(context.Background(), t, &WaitReady{Kind: "tcp", Address: addr, Interval: "50ms", WaitTimeout: "300ms"})
		want := "wait for tcp://" + addr + ": not ready after 300ms: last error: connect: connection refused"
		if err == nil || err.Error() != want {
			t.Fatalf("Run error = %v, want %q", err, want)
		}
		if took := time.Since(start); took < 300*time.Millisecond || took > 2*time.Second {
			t.Errorf("Run took %v, want about 300ms", took)
		}
		if out != nil {
			t.Errorf("outputs = %v, want nil", out)
		}
	})
}
