package live_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/flowdev/flow/engine/live"
	"github.com/flowdev/flow/internal/ci"
)

// clientEnv makes the test binary a client that asks for the runs of the state file
// it names and prints what it got, for TestServeOnlyToItsUser.
const clientEnv = "FLOW_LIVE_TEST_CLIENT"

func TestMain(m *testing.M) {
	if path := os.Getenv(clientEnv); path != "" {
		var runs []map[string]any
		if err := live.Runs(path, &runs); err != nil {
			fmt.Println("refused:", err)
			os.Exit(0)
		}
		fmt.Println("answered:", len(runs), "runs")
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestServeOnlyToItsUser: a process of another user gets no answer from a running
// flow's socket (its runs, status and the tasks' output are the user's), one of the
// same user does. The other user is nobody (65534), which only root can become.
func TestServeOnlyToItsUser(t *testing.T) {
	if os.Geteuid() != 0 {
		if ci.Enabled() {
			t.Fatal("this test switches a child process to another user, which needs root (CI runs as root)")
		}
		t.Skip("switching a child process to another user needs root")
	}
	path := filepath.Join(t.TempDir(), "state.db")
	stop, err := live.Serve(path, source{})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	client := clientBinary(t)
	for _, tc := range []struct {
		name string
		cred *syscall.Credential
		want string
	}{
		{"same user", nil, "answered: 2 runs"},
		{"another user", &syscall.Credential{Uid: 65534, Gid: 65534}, "refused:"},
	} {
		cmd := exec.Command(client, "-test.run=^$")
		cmd.Env = append(os.Environ(), clientEnv+"="+path)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: tc.cred}
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.HasPrefix(string(out), tc.want) {
			t.Errorf("%s: %v, printed %q; want %q", tc.name, err, out, tc.want)
		}
	}
}

// clientBinary is a copy of the test binary that another user may run: go test's own
// directory is its user's alone.
func clientBinary(t *testing.T) string {
	dir, err := os.MkdirTemp("", "flow-live-test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	b, err := os.ReadFile(os.Args[0])
	if err == nil {
		err = os.Chmod(dir, 0o755)
	}
	path := filepath.Join(dir, "client")
	if err == nil {
		err = os.WriteFile(path, b, 0o755)
	}
	if err != nil {
		t.Fatal(err)
	}
	return path
}
