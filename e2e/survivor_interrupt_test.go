package e2e

import (
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSecondInterruptKillsSurvivor (issue 37, finding 9): a second Ctrl-C while a
// resume waits out the grace of a survivor that ignores SIGTERM (the command of a run
// SIGKILLed before) kills the survivor, as docs/cli.md promises, instead of leaving it
// running.
func TestSecondInterruptKillsSurvivor(t *testing.T) {
	tag, dir := leaveSurvivor(t, "trap '' TERM; sleep 60 & wait")
	r := start(t, tag, dir, "resume", "--progress", "plain")
	for end := time.Now().Add(20 * time.Second); !strings.Contains(r.stdout.String(), "still runs; stopping it first"); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(end) || r.exited() {
			t.Fatalf("the resume did not stop the survivor\n%s", r.describe())
		}
	}
	r.signal(t, syscall.SIGINT)
	time.Sleep(200 * time.Millisecond)
	r.signal(t, syscall.SIGINT)
	if !r.wait(3 * time.Second) {
		t.Fatalf("the resume did not exit at the second SIGINT\n%s", r.describe())
	}
	// Well within the 5 s the survivor gets after SIGTERM: its SIGKILL came from the
	// second Ctrl-C, not from the end of the grace.
	for end := time.Now().Add(time.Second); len(tagged(tag)) > 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("the survivor still runs after the second Ctrl-C: %v\n%s", tagged(tag), r.describe())
		}
	}
}
