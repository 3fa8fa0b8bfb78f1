package state

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/flowdev/flow/internal/pgtest"
)

// childHoldEnv makes the test binary open that PostgreSQL state for writing,
// print "held" and wait to be killed: a second process holding the lock.
const childHoldEnv = "FLOW_STATE_TEST_CHILD_HOLD"

func childHold(loc string) int {
	s, err := Open(loc, Options{})
	if err != nil {
		fmt.Println("error:", err)
		return 1
	}
	defer s.Close()
	fmt.Println("held")
	time.Sleep(time.Hour)
	return 0
}

// holdInChild starts a process holding loc's writer lock and returns it once it holds it.
func holdInChild(t *testing.T, loc string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childHoldEnv+"="+loc)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, _ := bufio.NewReader(out).ReadString('\n')
	if strings.TrimSpace(line) != "held" {
		t.Fatalf("child: %q", line)
	}
	return cmd
}

// TestPGLock: a second writer is refused at once, naming the holder; readers read
// while the lock is held; the lock of a SIGKILLed holder is gone at once.
func TestPGLock(t *testing.T) {
	loc := pgState(t)
	s := open(t, loc)
	r := &Run{Flow: "f", Status: Running}
	if err := s.CreateRun(r); err != nil {
		t.Fatal(err)
	}
	s.Close()

	child := holdInChild(t, loc)
	start := time.Now()
	_, err := Open(loc, Options{})
	var le *LockedError
	if !errors.As(err, &le) || le.Holder == nil {
		t.Fatalf("second writer: %v, want a *LockedError naming the holder", err)
	}
	if time.Since(start) > 5*time.Second {
		t.Errorf("refusal took %s", time.Since(start))
	}
	host, _ := os.Hostname()
	if le.Holder.PID != child.Process.Pid || le.Holder.Host != host || le.Holder.User == "" || le.Holder.Started.IsZero() {
		t.Errorf("holder = %+v, want pid %d on %s", le.Holder, child.Process.Pid, host)
	}
	for _, want := range []string{fmt.Sprint(child.Process.Pid), host, "in use by"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if strings.Contains(err.Error(), pgtest.Password) {
		t.Errorf("error %q shows the password", err)
	}
	info, err := Lock(loc)
	if err != nil || !info.Held || info.Holder == nil || info.Holder.PID != child.Process.Pid {
		t.Errorf("Lock = %+v, %v; want held by %d", info, err, child.Process.Pid)
	}

	// A reader reads while the writer holds the state.
	ro, err := Open(loc, Options{ReadOnly: true})
	if err != nil {
		t.Fatalf("reader while held: %v", err)
	}
	if got, err := ro.LatestRun(); err != nil || got == nil || got.ID != r.ID {
		t.Errorf("reader: LatestRun = %+v, %v", got, err)
	}
	if !ro.WriterActive() {
		t.Error("WriterActive = false while a writer holds the state")
	}
	ro.Close()

	// SIGKILL: no stale lock.
	child.Process.Signal(syscall.SIGKILL)
	child.Wait()
	deadline := time.Now().Add(5 * time.Second)
	for {
		s, err := Open(loc, Options{})
		if err == nil {
			s.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("lock of a killed holder still held after 5s: %v", err)
		}
		time.Sleep(20 * time.Millisecond) // the server notices the closed socket at once; give it a moment
	}
	if info, err := Lock(loc); err != nil || info.Held {
		t.Errorf("Lock after close = %+v, %v; want not held", info, err)
	}
	// Different names never block each other.
	other := open(t, pgState(t))
	other.Close()
}

// backendPID is the server process of s's connection.
func backendPID(s *Store) uint32 { return s.pg.holder.BackendPID }

// TestPGFencing: a writer whose session was ended (a partition, a pause) and who
// comes back after another writer took the state commits nothing, whether the
// other still holds the lock or has released it.
func TestPGFencing(t *testing.T) {
	for _, otherStillHolds := range []bool{true, false} {
		t.Run(fmt.Sprintf("other_holds=%v", otherStillHolds), func(t *testing.T) {
			loc := pgState(t)
			a, err := Open(loc, Options{RetryFor: 3 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			defer a.Close()
			r := &Run{Flow: "f", Status: Running}
			if err := a.CreateRun(r); err != nil {
				t.Fatal(err)
			}
			terminate(t, backendPID(a))
			b, err := Open(loc, Options{})
			if err != nil {
				t.Fatalf("B after A's session ended: %v", err)
			}
			if err := b.Commit(r.ID, nil, []*Instance{{Address: "b", Status: Succeeded}}, nil); err != nil {
				t.Fatal(err)
			}
			if !otherStillHolds {
				b.Close()
			}
			err = a.Commit(r.ID, nil, []*Instance{{Address: "a", Status: Succeeded}}, nil)
			var fe *FencedError
			if !errors.As(err, &fe) {
				t.Fatalf("A's commit after B took over: %v, want a *FencedError", err)
			}
			if otherStillHolds {
				b.Close()
			}
			ro, _ := Open(loc, Options{ReadOnly: true})
			defer ro.Close()
			in, _ := ro.Instances(r.ID)
			if len(in) != 1 || in[0].Address != "b" {
				t.Errorf("instances = %v, want only B's", in)
			}
		})
	}
}

// TestPGReconnect: the writer's session ended without anyone taking over (a
// restart of the server, a dropped connection): the next write connects again,
// takes the lock back and is stored once.
func TestPGReconnect(t *testing.T) {
	loc := pgState(t)
	a, err := Open(loc, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	r := &Run{Flow: "f", Status: Running}
	if err := a.CreateRun(r); err != nil {
		t.Fatal(err)
	}
	terminate(t, backendPID(a))
	if err := a.Commit(r.ID, nil, []*Instance{{Address: "a", Status: Succeeded}}, nil); err != nil {
		t.Fatalf("commit after the session ended: %v", err)
	}
	if _, err := Open(loc, Options{}); !errors.As(err, new(*LockedError)) {
		t.Errorf("second writer after the reconnect: %v, want *LockedError", err)
	}
	in, err := a.Instances(r.ID)
	if err != nil || len(in) != 1 {
		t.Errorf("instances = %v, %v", in, err)
	}
}

func terminate(t *testing.T, pid uint32) {
	t.Helper()
	if _, err := pgtest.Shared(t).SQL("postgres", fmt.Sprintf("SELECT pg_terminate_backend(%d)", pid)); err != nil {
		t.Fatal(err)
	}
}

// TestPGConnectErrors: a malformed URL, an unreachable server, a wrong password, a
// missing database: one clear line each, and nothing created.
func TestPGConnectErrors(t *testing.T) {
	c := pgtest.Shared(t)
	good := pgState(t)
	closed := fmt.Sprintf("postgres://u:p@127.0.0.1:%d/x", freePortForTest(t))
	tests := []struct {
		name, loc string
		want      []string
	}{
		{"malformed", "postgres://u:pw@127.0.0.1:notaport/db", []string{"malformed PostgreSQL URL"}},
		{"no database", fmt.Sprintf("postgres://u@127.0.0.1:%d/", c.Port), []string{"no database"}},
		{"bad schema", good + "&schema=Robert", []string{"schema"}},
		{"unreachable", closed, []string{"127.0.0.1:", "cannot reach"}},
		{"wrong password", strings.Replace(good, pgtest.Password, "wrong", 1), []string{"wrong password", fmt.Sprint(c.Port)}},
		{"missing database", strings.Replace(c.URL("nosuchdb"), "?", "?state=x&", 1), []string{"does not exist", "nosuchdb"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, ro := range []bool{false, true} {
				_, err := Open(tt.loc, Options{ReadOnly: ro})
				if err == nil {
					t.Fatal("Open succeeded")
				}
				msg := err.Error()
				for _, w := range tt.want {
					if !strings.Contains(msg, w) {
						t.Errorf("error %q does not say %q", msg, w)
					}
				}
				if strings.Contains(msg, "\n") || strings.Contains(msg, pgtest.Password) || strings.Contains(msg, ":pw@") {
					t.Errorf("error %q is not one line without a password", msg)
				}
			}
		})
	}
	if out, _ := c.SQL("postgres", "SELECT count(*) FROM pg_database WHERE datname = 'nosuchdb'"); out != "0" {
		t.Errorf("a database was created: %s", out)
	}
	// A reader of a state that does not exist creates nothing.
	fresh, err := c.NewDatabase()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Open(fresh+"&state=x", Options{ReadOnly: true}); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("read-only Open of a missing state: %v, want fs.ErrNotExist", err)
	}
	conn, err := pgx.Connect(context.Background(), fresh)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var n int
	conn.QueryRow(context.Background(), "SELECT count(*) FROM pg_namespace WHERE nspname = 'flow'").Scan(&n)
	if n != 0 {
		t.Error("a read-only Open created the schema")
	}
}

func freePortForTest(t *testing.T) int {
	l, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// TestPGServerRestart: the server restarts between and during commits; the
// writer waits, reconnects, takes its lock back and stores every record once.
func TestPGServerRestart(t *testing.T) {
	c := pgtest.Shared(t)
	loc := pgState(t)
	s, err := Open(loc, Options{RetryFor: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r := &Run{Flow: "f", Status: Running}
	if err := s.CreateRun(r); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- c.Restart(500 * time.Millisecond) }()
	for i := range 50 {
		addr := fmt.Sprintf("task.t%d", i)
		if err := s.Commit(r.ID, nil, []*Instance{{Address: addr, Status: Succeeded}}, map[string][]byte{addr: []byte(addr)}); err != nil {
			t.Fatalf("commit %d during the restart: %v", i, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	r2 := &Run{Flow: "f"}
	if err := s.CreateRun(r2); err != nil || r2.ID != r.ID+1 {
		t.Fatalf("CreateRun after the restart: id %d, %v", r2.ID, err)
	}
	in, err := s.Instances(r.ID)
	if err != nil || len(in) != 50 {
		t.Errorf("instances after the restart: %d, %v", len(in), err)
	}
	runs, _ := s.Runs()
	if len(runs) != 2 {
		t.Errorf("%d runs, want 2", len(runs))
	}
}

// TestPGFenceInTransaction: the fence alone refuses a write whose epoch moved on
// while the writer's session lived on (as through a transaction-pooling proxy,
// which breaks session locks): nothing of the commit is stored.
func TestPGFenceInTransaction(t *testing.T) {
	loc := pgState(t)
	a := open(t, loc)
	r := &Run{Flow: "f", Status: Running}
	if err := a.CreateRun(r); err != nil {
		t.Fatal(err)
	}
	l, _ := parseLocation(loc)
	db := l.config.Database
	if _, err := pgtest.Shared(t).SQL(db, fmt.Sprintf("UPDATE flow.states SET epoch = epoch + 1 WHERE name = '%s'", l.name)); err != nil {
		t.Fatal(err)
	}
	err := a.Commit(r.ID, &Run{ID: r.ID, Status: Succeeded}, []*Instance{{Address: "a", Status: Succeeded}}, map[string][]byte{"a": []byte("x")})
	if !errors.As(err, new(*FencedError)) {
		t.Fatalf("commit after the epoch moved: %v, want *FencedError", err)
	}
	in, _ := a.Instances(r.ID)
	got, _ := a.GetRun(r.ID)
	if len(in) != 0 || got.Status != Running {
		t.Errorf("a fenced commit stored %d instances, run %s", len(in), got.Status)
	}
}

// TestPGReadOnly: a reader's write methods fail and change nothing; readers do not
// take the writer lock.
func TestPGReadOnly(t *testing.T) {
	loc := pgState(t)
	s := open(t, loc)
	r := &Run{Flow: "f"}
	if err := s.CreateRun(r); err != nil {
		t.Fatal(err)
	}
	s.Close()
	ro, err := Open(loc, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if err := ro.CreateRun(&Run{}); err == nil {
		t.Error("CreateRun on a reader succeeded")
	}
	if err := ro.PutRun(&Run{ID: r.ID, Status: Failed}); err == nil {
		t.Error("PutRun on a reader succeeded")
	}
	if err := ro.Commit(r.ID, nil, []*Instance{{Address: "a"}}, nil); err == nil {
		t.Error("Commit on a reader succeeded")
	}
	w, err := Open(loc, Options{})
	if err != nil {
		t.Fatalf("writer while a reader is open: %v", err)
	}
	defer w.Close()
	runs, _ := w.Runs()
	in, _ := w.Instances(r.ID)
	if len(runs) != 1 || runs[0].Status != "" || len(in) != 0 {
		t.Errorf("a reader's writes changed the state: %d runs, %d instances", len(runs), len(in))
	}
}
