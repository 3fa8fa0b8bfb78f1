// Package pgtest starts throwaway PostgreSQL clusters for tests: initdb in a
// temporary directory, a server on a loopback port, stopped (by pg_ctl, on its
// own data directory) and removed after. It owns nothing else: a test that
// needs a database asks the cluster for one.
//
// PostgreSQL refuses to run as root; as root the cluster is made and run as the
// user "postgres" (Debian's package creates it) through runuser. The binaries are
// found on PATH or in Debian's /usr/lib/postgresql/VERSION/bin. Under CI a
// missing PostgreSQL fails the test (internal/ci); elsewhere it skips it.
package pgtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/flowdev/flow/internal/ci"
)

// Superuser and Password are the cluster's superuser, who logs in with a password
// over TCP (scram-sha-256), so that a wrong password is refused as it would be.
const (
	Superuser = "flowtest"
	Password  = "flowtest-secret"
)

// Cluster is one running throwaway cluster. Its methods are safe for one
// goroutine at a time.
type Cluster struct {
	Dir   string // data directory (removed by Stop)
	Port  int
	bin   string
	runAs string // "" or the user the server runs as
	root  string // the temporary directory holding Dir and the socket
}

// Start creates and starts a cluster. The error says what is missing when
// PostgreSQL is not installed.
func Start() (*Cluster, error) {
	bin, err := binDir()
	if err != nil {
		return nil, err
	}
	c := &Cluster{bin: bin}
	if os.Geteuid() == 0 {
		c.runAs = "postgres"
	}
	if c.root, err = os.MkdirTemp("", "flow-pg-"); err != nil {
		return nil, err
	}
	c.Dir = filepath.Join(c.root, "data")
	if c.runAs != "" {
		u, err := user.Lookup(c.runAs)
		if err != nil {
			os.RemoveAll(c.root)
			return nil, fmt.Errorf("postgres refuses to run as root and there is no user %q to run it as: %w", c.runAs, err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(c.root, uid, gid); err != nil {
			os.RemoveAll(c.root)
			return nil, err
		}
	}
	pw := filepath.Join(c.root, "pw")
	if err := os.WriteFile(pw, []byte(Password+"\n"), 0o644); err != nil {
		os.RemoveAll(c.root)
		return nil, err
	}
	if out, err := c.command("initdb", "-D", c.Dir, "-U", Superuser, "--pwfile", pw, "-A", "scram-sha-256",
		"--auth-local=trust", "-E", "UTF8", "--no-instructions", "-N").CombinedOutput(); err != nil {
		os.RemoveAll(c.root)
		return nil, fmt.Errorf("initdb: %w: %s", err, out)
	}
	if c.Port, err = freePort(); err != nil {
		os.RemoveAll(c.root)
		return nil, err
	}
	if err := c.start(); err != nil {
		os.RemoveAll(c.root)
		return nil, err
	}
	c.watchdog()
	return c, nil
}

// watchdog starts a shell, in a session of its own, that stops the cluster and
// removes its directory once this process is gone without having done so (a test
// binary killed by its timeout, a panic): a throwaway cluster never outlives its test.
func (c *Cluster) watchdog() {
	stop := fmt.Sprintf("%s -D %s -m immediate -w stop", filepath.Join(c.bin, "pg_ctl"), c.Dir)
	if c.runAs != "" {
		stop = "runuser -u " + c.runAs + " -- " + stop
	}
	script := fmt.Sprintf("while kill -0 %d 2>/dev/null; do sleep 2; done; [ -d %s ] && { %s; rm -rf %s; }; exit 0",
		os.Getpid(), c.Dir, stop, c.root)
	cmd := exec.Command("sh", "-c", script)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if cmd.Start() == nil {
		go cmd.Wait()
	}
}

func (c *Cluster) start() error {
	opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c synchronous_commit=on -c max_connections=200", c.Port, c.root)
	out, err := c.command("pg_ctl", "-D", c.Dir, "-l", filepath.Join(c.root, "log"), "-o", opts, "-w", "-t", "60", "start").CombinedOutput()
	if err != nil {
		log, _ := os.ReadFile(filepath.Join(c.root, "log"))
		return fmt.Errorf("pg_ctl start: %w: %s\n%s", err, out, log)
	}
	return nil
}

// Restart stops the server at once (-m immediate: its clients' connections break
// as in a crash) and starts it again on the same port after pause.
func (c *Cluster) Restart(pause time.Duration) error {
	if err := c.stop("immediate"); err != nil {
		return err
	}
	time.Sleep(pause)
	return c.start()
}

// Crash stops the server at once (-m immediate: its clients' connections break as in
// a crash) without removing it; Start it again with Resume.
func (c *Cluster) Crash() error { return c.stop("immediate") }

// Halt stops the server (fast shutdown) without removing it; Start it again with Resume.
func (c *Cluster) Halt() error { return c.stop("fast") }

// Resume starts a halted server.
func (c *Cluster) Resume() error { return c.start() }

func (c *Cluster) stop(mode string) error {
	out, err := c.command("pg_ctl", "-D", c.Dir, "-m", mode, "-w", "stop").CombinedOutput()
	if err != nil {
		return fmt.Errorf("pg_ctl stop: %w: %s", err, out)
	}
	return nil
}

// Stop stops the server and removes its directory.
func (c *Cluster) Stop() error {
	err := c.stop("fast")
	if rerr := os.RemoveAll(c.root); err == nil {
		err = rerr
	}
	return err
}

// URL is the superuser's address of database db.
func (c *Cluster) URL(db string) string {
	return fmt.Sprintf("postgres://%s:%s@127.0.0.1:%d/%s?sslmode=disable", Superuser, Password, c.Port, db)
}

// SQL runs statements through psql as the superuser (over the socket) in database db.
func (c *Cluster) SQL(db, sql string) (string, error) {
	cmd := c.command("psql", "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-h", c.root, "-p", strconv.Itoa(c.Port),
		"-U", Superuser, "-d", db, "-c", sql)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("psql: %w: %s", err, stderr.String())
	}
	return string(bytes.TrimSpace(out.Bytes())), nil
}

// NewDatabase creates a database with a name of its own and returns its URL.
func (c *Cluster) NewDatabase() (string, error) {
	dbMu.Lock()
	dbSeq++
	name := fmt.Sprintf("flow_%d_%d", os.Getpid(), dbSeq)
	dbMu.Unlock()
	if _, err := c.SQL("postgres", "CREATE DATABASE "+name); err != nil {
		return "", err
	}
	return c.URL(name), nil
}

var (
	dbMu  sync.Mutex
	dbSeq int
)

func (c *Cluster) command(name string, args ...string) *exec.Cmd {
	path := filepath.Join(c.bin, name)
	if c.runAs != "" {
		return exec.CommandContext(context.Background(), "runuser", append([]string{"-u", c.runAs, "--", path}, args...)...)
	}
	return exec.Command(path, args...)
}

// binDir finds the directory of initdb, pg_ctl and psql: Debian's newest
// /usr/lib/postgresql/*/bin, else initdb's on PATH.
func binDir() (string, error) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "pg_ctl")); err == nil {
			return d, nil
		}
	}
	if p, err := exec.LookPath("pg_ctl"); err == nil {
		return filepath.Dir(p), nil
	}
	return "", errors.New("PostgreSQL is not installed (no pg_ctl on PATH or in /usr/lib/postgresql/*/bin; Debian package postgresql)")
}

func version(binDir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return n
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

var (
	shared    *Cluster
	sharedErr error
	once      sync.Once
)

// Shared returns the test binary's cluster, started on first use; Cleanup stops it.
// Without PostgreSQL the test fails under CI and is skipped elsewhere.
func Shared(t testing.TB) *Cluster {
	t.Helper()
	once.Do(func() { shared, sharedErr = Start() })
	if sharedErr != nil {
		if ci.Enabled() {
			t.Fatalf("PostgreSQL: %v", sharedErr)
		}
		t.Skipf("PostgreSQL: %v", sharedErr)
	}
	return shared
}

// Database returns the URL of a new database in the shared cluster.
func Database(t testing.TB) string {
	t.Helper()
	url, err := Shared(t).NewDatabase()
	if err != nil {
		t.Fatal(err)
	}
	return url
}

// Cleanup stops the shared cluster if one was started; call it from TestMain after m.Run.
func Cleanup() {
	if shared != nil {
		shared.Stop()
	}
}
