package cli

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/flowdev/flow/engine"
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

// fakeProgress is a walk with running running instances, 3 done and 5 waiting.
type fakeProgress struct{ running int }

func (p fakeProgress) Snapshot() []engine.InstanceRecord {
	began := time.Now().Add(-time.Second)
	var recs []engine.InstanceRecord
	for i := 0; i < 3; i++ {
		recs = append(recs, engine.InstanceRecord{Address: fmt.Sprintf("exec.done[%d]", i), Status: engine.Succeeded})
	}
	for i := 0; i < p.running; i++ {
		recs = append(recs, engine.InstanceRecord{Address: fmt.Sprintf(`exec.build["m%02d"]`, i), Status: engine.Running, StartedAt: &began})
	}
	for i := 0; i < 5; i++ {
		recs = append(recs, engine.InstanceRecord{Address: fmt.Sprintf("exec.later[%d]", i), Status: engine.Pending})
	}
	return recs
}
func (fakeProgress) Log(string) ([]byte, bool) { return nil, false }
func (fakeProgress) LastLine(addr string) string {
	return "compiling " + addr
}

// viewOf is a started live view (without its redraw ticker) of p on a terminal of
// width by height, writing to out.
func viewOf(p engine.Progress, width, height int, out io.Writer) *liveView {
	v := newLiveView(out)
	v.size = func() (int, int) { return width, height }
	v.runner = p
	return v
}

// TestLiveViewFitsTheTerminal: the view never has as many lines as the terminal has
// rows; running instances that do not fit are one line "… and N more running"; the
// notice (what Ctrl-C does now) is always in it, wrapped to the width, and stays on
// the screen below every event line and when the view closes.
func TestLiveViewFitsTheTerminal(t *testing.T) {
	notice := `Interrupting: stopping running tasks (press Ctrl-C again to exit at once; "flow resume --state .flow/lab.db" continues)`
	for _, tt := range []struct {
		name            string
		running, height int
		notice          bool
		shown, more     int // running lines shown, and the count of the rest (0: no such line)
	}{
		{"all fit", 5, 24, false, 5, 0},
		{"exactly fit", 22, 24, false, 22, 0}, // header + 22 + the cursor's line
		{"one too many", 23, 24, false, 21, 2},
		{"many more", 40, 24, false, 21, 19},
		{"with the notice", 40, 24, true, 19, 21}, // the notice wraps to two lines at 80
		{"notice, all fit", 3, 24, true, 3, 0},
		{"tiny terminal", 40, 5, true, 0, 40},
		{"height unknown", 40, 0, true, 40, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			v := viewOf(fakeProgress{running: tt.running}, 80, tt.height, io.Discard)
			if tt.notice {
				v.notice = notice
			}
			view := v.render()
			lines := strings.Split(strings.TrimSuffix(view, "\n"), "\n")
			if tt.height > 0 && len(lines) > tt.height-1 {
				t.Errorf("%d lines on a terminal of %d rows:\n%s", len(lines), tt.height, view)
			}
			for _, l := range lines {
				if n := len([]rune(l)); n >= 80 {
					t.Errorf("line of %d characters on a terminal 80 wide: %q", n, l)
				}
			}
			if got := strings.Count(view, " => exec.build"); got != tt.shown {
				t.Errorf("%d running lines, want %d:\n%s", got, tt.shown, view)
			}
			more := fmt.Sprintf(" … and %d more running\n", tt.more)
			if tt.more > 0 != strings.Contains(view, more) || tt.more == 0 && strings.Contains(view, "more running") {
				t.Errorf("want the line %q: %v\n%s", more, tt.more > 0, view)
			}
			if tt.notice && strings.Join(strings.Fields(view[strings.Index(view, "Interrupting"):]), " ") != notice {
				t.Errorf("the notice is not whole at the end of the view:\n%s", view)
			}
			if tt.height > 5 && !strings.HasPrefix(view, "[+] ") {
				t.Errorf("no count line:\n%s", view)
			}
		})
	}

	// On the screen: event lines go above the view, which is redrawn below them with
	// the notice, and the notice is left when the view closes.
	var screen bytes.Buffer
	v := viewOf(fakeProgress{running: 30}, 80, 12, &screen)
	v.Write([]byte("exec.a: started\n"))
	if !v.notify(notice) {
		t.Fatal("a started view did not take the notice")
	}
	for i := 0; i < 50; i++ {
		fmt.Fprintf(v, "exec.build[\"m%02d\"]: interrupted\n", i)
		frame := screen.String()[strings.LastIndex(screen.String(), "\x1b[J"):]
		if !strings.Contains(frame, "Interrupting: stopping running tasks") || !strings.Contains(frame, "continues)") {
			t.Fatalf("after event line %d the view lacks the notice:\n%q", i, frame)
		}
		// The frame is the event line, then the view.
		if n := strings.Count(frame, "\n") - 1; n > 11 {
			t.Fatalf("a view of %d lines on 12 rows:\n%s", n, frame)
		}
	}
	v.started = true
	close(v.done) // no ticker runs
	v.close()
	end := screen.String()[strings.LastIndex(screen.String(), "\x1b[J")+len("\x1b[J"):]
	if end != notice+"\n" {
		t.Errorf("after close the screen ends with %q, want the notice", end)
	}
}
