package cli

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/flowdev/flow/engine"
)

// progressFlag is --progress on run and resume.
type progressFlag struct{ mode string }

func (p *progressFlag) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&p.mode, "progress", "auto",
		"auto (tty on a terminal, else plain), plain (one line per event) or tty (a live view of the running tasks)")
}

// live reports whether the run shows the live view on out.
func (p *progressFlag) live(out io.Writer) (bool, error) {
	switch p.mode {
	case "plain":
		return false, nil
	case "tty":
		return true, nil
	case "auto", "":
		f, ok := out.(*os.File)
		return ok && term.IsTerminal(int(f.Fd())) && os.Getenv("TERM") != "dumb", nil
	}
	return false, failf(ExitInvalid, "unknown --progress %q: use auto, plain or tty", p.mode)
}

// liveView draws, below the lines of a run's events, one line per running instance
// with its elapsed time and last output line, and the counts of done, running and
// waiting instances, redrawn in place as BuildKit does for parallel steps. Writes of
// event lines go above it. It fits the terminal: instances that do not fit are
// counted on one line, and a notice (what Ctrl-C does now) is always drawn, last. It
// is safe for concurrent use.
type liveView struct {
	mu     sync.Mutex
	out    io.Writer
	runner engine.Progress
	began  time.Time
	drawn  int // lines of the view on the terminal now
	// size is the terminal's width and height in characters; a height of 0 is
	// unknown, and then the view is not cut to fit.
	size func() (width, height int)
	// notice is drawn at the bottom of the view until it closes, and then left on
	// the screen above what follows.
	notice string
	// started is set by start, on the goroutine that calls close.
	started bool
	stop    chan struct{}
	done    chan struct{}
}

// liveRefresh is how often the view is redrawn when no event comes.
const liveRefresh = 200 * time.Millisecond

func newLiveView(out io.Writer) *liveView {
	return &liveView{out: out, began: time.Now(), stop: make(chan struct{}), done: make(chan struct{}),
		size: func() (int, int) { return terminalSize(out) }}
}

// terminalSize is the size of the terminal out is, or a width of 100 and an unknown
// height.
func terminalSize(out io.Writer) (width, height int) {
	if f, ok := out.(*os.File); ok {
		if w, h, err := term.GetSize(int(f.Fd())); err == nil && w > 0 {
			return w, h
		}
	}
	return 100, 0
}

// progressOut returns where a run's or destroy's events go: stdout, or with live set
// a live view over it (start it, and close it before printing the summary). The view
// is nil without live; its methods then do nothing.
func (c *CLI) progressOut(live bool) (io.Writer, *liveView) {
	if !live {
		return c.stdout, nil
	}
	v := newLiveView(c.stdout)
	return v, v
}

// start begins redrawing the view of runner until close.
func (v *liveView) start(runner engine.Progress) {
	if v == nil {
		return
	}
	v.mu.Lock()
	v.runner = runner
	v.mu.Unlock()
	v.started = true
	go func() {
		defer close(v.done)
		tick := time.NewTicker(liveRefresh)
		defer tick.Stop()
		for {
			select {
			case <-v.stop:
				return
			case <-tick.C:
				v.mu.Lock()
				v.redraw(nil)
				v.mu.Unlock()
			}
		}
	}()
}

// close stops redrawing and removes the view, leaving the event lines and the
// notice, if there is one. A view never started (the walk was refused) has nothing
// to remove.
func (v *liveView) close() {
	if v == nil || !v.started {
		return
	}
	close(v.stop)
	<-v.done
	v.mu.Lock()
	defer v.mu.Unlock()
	v.erase()
	if v.notice != "" {
		fmt.Fprintln(v.out, v.notice)
	}
}

// notify shows text at the bottom of the view from now on, where no event line
// scrolls it away or overwrites it; it stays on the screen when the view closes. It
// reports false when there is no view to show it (nil, or not started): print it
// elsewhere.
func (v *liveView) notify(text string) bool {
	return v.drawing(func() {
		v.notice = text
		v.redraw(nil)
	})
}

// leave removes the view and writes its notice and then text, for a process that
// exits at once: the screen keeps both, and no half-drawn view.
func (v *liveView) leave(text string) bool {
	return v.drawing(func() {
		v.erase()
		if v.notice != "" {
			fmt.Fprintln(v.out, v.notice)
		}
		fmt.Fprintln(v.out, text)
		v.runner, v.notice = nil, "" // nothing more to draw
	})
}

// drawing calls f under the view's lock if the view is drawn, and reports whether it was.
func (v *liveView) drawing(f func()) bool {
	if v == nil {
		return false
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.runner == nil {
		return false
	}
	f()
	return true
}

// Write puts event lines above the view.
func (v *liveView) Write(p []byte) (int, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.redraw(p)
	return len(p), nil
}

// redraw erases the view, writes lines, and draws the view again, in one write so
// the terminal never shows it half drawn.
func (v *liveView) redraw(lines []byte) {
	var b strings.Builder
	if v.drawn > 0 {
		fmt.Fprintf(&b, "\x1b[%dF\x1b[J", v.drawn) // to the start of its first line; clear below
	}
	b.Write(lines)
	view := v.render()
	b.WriteString(view)
	v.drawn = strings.Count(view, "\n")
	io.WriteString(v.out, b.String())
}

func (v *liveView) erase() {
	if v.drawn > 0 {
		fmt.Fprintf(v.out, "\x1b[%dF\x1b[J", v.drawn)
		v.drawn = 0
	}
}

// render is the view: a count line, one line per running instance, each cut to the
// terminal's width, and the notice, wrapped. On a terminal of known height it has
// fewer lines than the terminal (the cursor stays below it, and erasing a view that
// scrolled would erase the wrong lines): the instances that do not fit are one line,
// "… and N more running"; the notice always fits, then the count line.
func (v *liveView) render() string {
	if v.runner == nil {
		return ""
	}
	width, height := v.size()
	var done, waiting int
	var running []engine.InstanceRecord
	for _, r := range v.runner.Snapshot() {
		switch r.Status {
		case engine.Running:
			running = append(running, r)
		case engine.Pending:
			waiting++
		default:
			done++
		}
	}
	notice := wrap(v.notice, width)
	header := true
	shown, more := len(running), false
	if rows := height - 1; height > 0 { // the cursor's line is the last
		room := rows - len(notice) - 1
		if room < 0 {
			header, room = rows-len(notice) > 0, 0
		}
		if len(running) > room {
			shown, more = max(room-1, 0), room > 0
		}
	}
	var b strings.Builder
	if header {
		b.WriteString(cut(fmt.Sprintf("[+] %s: %d done, %d running, %d waiting",
			time.Since(v.began).Round(100*time.Millisecond), done, len(running), waiting), width) + "\n")
	}
	now := time.Now()
	for _, r := range running[:shown] {
		elapsed := ""
		if r.StartedAt != nil {
			elapsed = now.Sub(*r.StartedAt).Round(100 * time.Millisecond).String()
		}
		line := fmt.Sprintf(" => %s  %s", r.Address, elapsed)
		if last := v.runner.LastLine(r.Address); last != "" {
			line += "  " + last
		}
		b.WriteString(cut(line, width) + "\n")
	}
	if more {
		b.WriteString(cut(fmt.Sprintf(" … and %d more running", len(running)-shown), width) + "\n")
	}
	for _, line := range notice {
		b.WriteString(line + "\n")
	}
	return b.String()
}

// wrap breaks text into lines of fewer than width characters, at spaces where it
// can, but not inside a quoted command ("flow resume --state x.db"), which a reader
// copies: it moves to the next line whole, and is broken only when it is longer than
// a line. "" is no line.
func wrap(text string, width int) []string {
	if text == "" {
		return nil
	}
	limit := max(width-1, 1)
	var lines []string
	for _, para := range strings.Split(text, "\n") {
		line := []rune{}
		for _, word := range unbroken(strings.Fields(cut(para, len(para)+2)), limit) {
			w := []rune(word)
			switch {
			case len(line) == 0:
			case len(line)+1+len(w) <= limit:
				line = append(line, ' ')
			default:
				lines, line = append(lines, string(line)), nil
			}
			for len(line)+len(w) > limit { // a word longer than a line: split it
				k := limit - len(line)
				lines = append(lines, string(append(line, w[:k]...)))
				line, w = nil, w[k:]
			}
			line = append(line, w...)
		}
		lines = append(lines, string(line))
	}
	return lines
}

// unbroken joins the words from one that opens a double quote to the one that closes
// it, so a quoted command is one word for wrap, when it fits in limit runes; a longer
// one stays words, to break between them.
func unbroken(words []string, limit int) []string {
	var out, group []string
	for _, w := range words {
		if group == nil && strings.Count(w, `"`)%2 == 0 {
			out = append(out, w)
			continue
		}
		group = append(group, w)
		if len(group) > 1 && strings.Count(w, `"`)%2 == 1 { // closes the quote
			if joined := strings.Join(group, " "); utf8.RuneCountInString(joined) <= limit {
				out = append(out, joined)
			} else {
				out = append(out, group...)
			}
			group = nil
		}
	}
	return append(out, group...) // a quote never closed: words as they are
}

// cut shortens s to width columns (runes; wide characters may overflow), keeping a
// line of the view from wrapping, which would break erasing it.
func cut(s string, width int) string {
	s = strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return ' ' // a task's escape sequences must not move the cursor
		}
		return r
	}, s)
	if r := []rune(s); len(r) > width-1 {
		return string(r[:max(width-2, 0)]) + "…"
	}
	return s
}
