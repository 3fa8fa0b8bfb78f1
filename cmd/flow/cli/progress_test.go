package cli

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/creack/pty"
)

// TestLiveViewOnTerminal runs a flow with stdout on a pseudo-terminal: --progress
// auto picks the live view, which shows each running instance with its last output
// line and the counts, and is erased at the end, leaving the event lines and the
// summary; task output goes to the logs only.
func TestLiveViewOnTerminal(t *testing.T) {
	ptm, tty, err := pty.Open()
	if err != nil {
		t.Fatalf("open a pty: %v", err)
	}
	defer ptm.Close()
	if err := pty.Setsize(ptm, &pty.Winsize{Rows: 40, Cols: 120}); err != nil {
		t.Fatal(err)
	}
	var screen bytes.Buffer
	copied := make(chan struct{})
	go func() { io.Copy(&screen, ptm); close(copied) }()

	state := filepath.Join(t.TempDir(), "state.db")
	t.Setenv("TERM", "xterm")
	var stderr bytes.Buffer
	err = New(testRegistry(t), tty, &stderr).Execute([]string{"run", flowPath("slow.hcl"), "--state", state})
	tty.Close()
	<-copied
	if err != nil {
		t.Fatalf("run: %v\n%s\n%s", err, stderr.String(), screen.String())
	}
	out := screen.String()
	for _, want := range []string{
		"[+] ",
		" running, ",
		` => exec.left  `,
		"warming up left",
		"\x1b[",                // the view is redrawn in place
		"exec.left: succeeded", // event lines stay
		"Run 1 succeeded",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("terminal output lacks %q:\n%q", want, out)
		}
	}
	if strings.Contains(out, "[exec.left] warming up left") {
		t.Errorf("task output printed as event lines in the live view:\n%q", out)
	}
}

// TestProgressPlain: --progress plain on a terminal, and any output that is not a
// terminal, gets the line-per-event output.
func TestProgressPlain(t *testing.T) {
	h := newHarness(t)
	r := h.expect(ExitOK, "run", flowPath("slow.hcl"), "--progress", "plain", "--parallelism", "1")
	if !strings.Contains(r.stdout, "[exec.left] warming up left\n") || strings.Contains(r.stdout, "\x1b[") {
		t.Errorf("plain output:\n%q", r.stdout)
	}
	h.expect(ExitInvalid, "run", flowPath("slow.hcl"), "--new", "--progress", "fancy")
	if _, err := os.Stat(h.state); err != nil {
		t.Fatal(err)
	}
}
