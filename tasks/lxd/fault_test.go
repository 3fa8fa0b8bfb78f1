package lxd

import (
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// daemonSocket is the real LXD daemon's socket, as the client finds it.
func daemonSocket() string {
	if s := os.Getenv("LXD_SOCKET"); s != "" {
		return s
	}
	if d := os.Getenv("LXD_DIR"); d != "" {
		return filepath.Join(d, "unix.socket")
	}
	return "/var/lib/lxd/unix.socket"
}

// socketProxy stands in for a restarting LXD daemon without touching the shared
// one: tasks reach the real daemon through a unix socket of the test's own, which
// the proxy can take away (closing every connection, removing the socket file, as
// a daemon that stops does) and put back.
type socketProxy struct {
	path string

	mu    sync.Mutex
	l     net.Listener
	conns []net.Conn
}

func newSocketProxy(t *testing.T) *socketProxy {
	t.Helper()
	p := &socketProxy{path: filepath.Join(t.TempDir(), "unix.socket")}
	t.Cleanup(p.stop)
	return p
}

func (p *socketProxy) start(t *testing.T) {
	t.Helper()
	l, err := net.Listen("unix", p.path)
	if err != nil {
		t.Fatal(err)
	}
	p.mu.Lock()
	p.l = l
	p.mu.Unlock()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("unix", daemonSocket())
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, up)
			p.mu.Unlock()
			go func() { _, _ = io.Copy(up, c); up.Close() }()
			go func() { _, _ = io.Copy(c, up); c.Close() }()
		}
	}()
}

// stop closes the listener (which removes the socket file) and every connection.
func (p *socketProxy) stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.l != nil {
		p.l.Close()
		p.l = nil
	}
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// TestTransientMissingSocket starts a task while its daemon's socket is missing
// and provides it 1.5 s later: the task retries on its own, saying so, and succeeds.
func TestTransientMissingSocket(t *testing.T) {
	proxy := newSocketProxy(t)
	name := testName("prof")
	deleteProfileAtCleanup(t, name)
	go func() {
		time.Sleep(1500 * time.Millisecond)
		proxy.start(t)
	}()
	_, printed := mustValidateAndRun(t, &Profile{Name: name, Remote: map[string]string{"socket": proxy.path}})
	wantContains(t, "output", printed, "transient fault: socket missing; retry 1 in 250ms", "created")
}

// TestTransientStreamsDrop takes the daemon away for a second while lxd_exec
// runs a command and while lxd_launch's wait_for probes, then puts it back. The
// daemon itself never stops, so its operations survive: the exec's result is read
// back by its operation id, and the wait_for goes on probing.
func TestTransientStreamsDrop(t *testing.T) {
	proxy := newSocketProxy(t)
	proxy.start(t)
	remote := map[string]string{"socket": proxy.path}
	cut := func(after time.Duration) chan struct{} {
		done := make(chan struct{})
		go func() {
			defer close(done)
			time.Sleep(after)
			proxy.stop()
			time.Sleep(time.Second)
			proxy.start(t)
		}()
		return done
	}

	inst := launchTestInstance(t)
	done := cut(700 * time.Millisecond)
	out, printed, err := validateAndRun(t, &Exec{Instance: inst, Remote: remote, Script: "sleep 2; echo finished > /tmp/flow-fault; echo done"})
	<-done
	if err != nil {
		t.Fatalf("exec across the cut: %v\n%s", err, printed)
	}
	if got := inside(t, inst, "cat /tmp/flow-fault"); got != "finished" {
		t.Errorf("the command did not finish: /tmp/flow-fault = %q", got)
	}
	t.Logf("exec across the cut: exit code %d, stdout %q; printed:\n%s", outNum(t, out, "exit_code"), outStr(t, out, "stdout"), printed)

	name := testName("b")
	deleteInstanceAtCleanup(t, name)
	done = cut(300 * time.Millisecond)
	_, printed, err = validateAndRun(t, &Launch{Name: name, Image: testImage(t), Remote: remote,
		WaitFor: []string{"sh", "-c", "sleep 1; test -e /proc/1"}})
	<-done
	if err != nil {
		t.Fatalf("launch across the cut: %v\n%s", err, printed)
	}
	if !strings.Contains(printed, "ready after") {
		t.Errorf("launch printed no readiness:\n%s", printed)
	}
	t.Logf("launch across the cut printed:\n%s", printed)
}
