package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flowdev/flow/internal/pgtest"
)

// marksOf counts the lines of each instance's mark file under dir (one per start).
func marksOf(t *testing.T, dir string) (map[string]int, int) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*"))
	if err != nil {
		t.Fatal(err)
	}
	n, total := map[string]int{}, 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		n[filepath.Base(f)] = strings.Count(string(data), "\n")
		total += n[filepath.Base(f)]
	}
	return n, total
}

// TestPostgresTakenOverStartsNothing (issue 37, finding 6): writer A runs 400
// instances at parallelism 4 and is stopped (SIGSTOP, A alone: its tasks finish); its
// session is ended; B resumes the run to its end; A, continued, starts no instance (no
// mark file grows), stops at once and says it was taken over.
func TestPostgresTakenOverStartsNothing(t *testing.T) {
	url, marks, b, _, tagB, pa, stopped := stoppedHolder(t, "takeover")
	defer syscall.Kill(pa.pid(), syscall.SIGCONT)
	if r := runFlow(t, tagB, b.dir, 120*time.Second, "resume", "--state", url); r.code != 0 {
		t.Fatalf("B's resume after A's session ended:\n%s", r.desc)
	}
	doc := waitPGStatus(t, b, tagB, url, func(statusDoc) bool { return true })
	if doc.Status != "succeeded" || countPG(doc, "succeeded") != 400 {
		t.Fatalf("after B's resume: %s with %d succeeded", doc.Status, countPG(doc, "succeeded"))
	}
	before, total := marksOf(t, marks)
	// The lease's contract: a writer paused at least LeaseFor (2 s) starts nothing
	// before it has confirmed its lock again.
	time.Sleep(time.Until(stopped.Add(3 * time.Second)))
	continued := time.Now()
	if err := syscall.Kill(pa.pid(), syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	if !pa.wait(20 * time.Second) {
		t.Fatalf("A did not stop within 20 s of being continued\n%s", pa.describe())
	}
	took := pa.ended.Sub(continued)
	t.Logf("A stopped %s after it was continued, exit %d; its stderr:\n%s", took.Round(time.Millisecond), pa.code(), pa.stderr.String())
	out := pa.stdout.String() + pa.stderr.String()
	if pa.code() == 0 || !strings.Contains(out, "taken over") {
		t.Errorf("A did not fail saying the state was taken over:\n%s", pa.describe())
	}
	if !strings.Contains(pa.stdout.String(), "taken over by another flow") || !strings.Contains(pa.stdout.String(), "starting nothing more") {
		t.Errorf("A's walk did not say at once that it stops, taken over:\n%s", pa.describe())
	}
	if strings.Contains(out, "is back") {
		t.Errorf("A said its database was back though its lock was lost:\n%s", pa.describe())
	}
	after, totalAfter := marksOf(t, marks)
	grew := 0
	for key, n := range after {
		if n > before[key] {
			grew++
		}
	}
	if grew > 0 || totalAfter != total {
		t.Errorf("A started %d instances (%d marks -> %d) after B took over", grew, total, totalAfter)
	}
	if took > 5*time.Second {
		t.Errorf("A took %s to stop after it was continued, want it at once", took)
	}
}

// startsOf reads the start lines under dir ("TAG NANOSECONDS", one per start), by tag.
func startsOf(t *testing.T, dir string) map[string][]time.Time {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*"))
	if err != nil {
		t.Fatal(err)
	}
	starts := map[string][]time.Time{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			tag, ns, ok := strings.Cut(line, " ")
			n, err := strconv.ParseInt(ns, 10, 64)
			if !ok || err != nil {
				t.Fatalf("mark line %q in %s", line, f)
			}
			starts[tag] = append(starts[tag], time.Unix(0, n))
		}
	}
	return starts
}

// TestPostgresShortPauseNoOverlap: writer A is stopped for less than its lease (2 s)
// while its session is ended and B takes the state over; A, continued at once, may
// start an instance while its lease lasts, but B, which took the lock from a holder
// that did not release it, starts nothing until that lease has run out: no instance
// starts on A after B's first start, and A stops saying it was taken over.
func TestPostgresShortPauseNoOverlap(t *testing.T) {
	url, marks, b, tagA, tagB, pa, stopped := stoppedHolder(t, "shortpause")
	defer syscall.Kill(pa.pid(), syscall.SIGCONT)
	pb := b.start(t, tagB, "resume", "--state", url)
	for { // continue A as soon as B holds the lock
		r := b.flow(t, newTag(t), "state", "lock", "--json", "--state", url)
		var l lockDoc
		if json.Unmarshal([]byte(r.stdout), &l) == nil && l.Held && l.Holder != nil && l.Holder.PID == pb.pid() {
			break
		}
		if pb.exited() || time.Since(stopped) > 30*time.Second {
			t.Fatalf("B did not take the lock\n%s", pb.describe())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := syscall.Kill(pa.pid(), syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	t.Logf("A was stopped for %s", time.Since(stopped).Round(time.Millisecond))
	if !pa.wait(20 * time.Second) {
		t.Fatalf("A did not stop within 20 s of being continued\n%s", pa.describe())
	}
	if !pb.wait(120 * time.Second) {
		t.Fatalf("B's resume did not finish\n%s", pb.describe())
	}
	if pb.code() != 0 {
		t.Fatalf("B's resume failed:\n%s", pb.describe())
	}
	if pa.code() == 0 || !strings.Contains(pa.stdout.String()+pa.stderr.String(), "taken over") {
		t.Errorf("A did not fail saying the state was taken over:\n%s", pa.describe())
	}
	starts := startsOf(t, marks)
	if len(starts[tagB]) == 0 {
		t.Fatal("B started nothing")
	}
	firstB := slices.MinFunc(starts[tagB], time.Time.Compare)
	late := 0
	for _, s := range starts[tagA] {
		if !s.Before(firstB) {
			late++
		}
	}
	lastA := slices.MaxFunc(starts[tagA], time.Time.Compare)
	t.Logf("A's last start %s before B's first", firstB.Sub(lastA).Round(time.Millisecond))
	if late > 0 {
		t.Errorf("%d instances started on A after B's first start", late)
	}
}

// summaryLine is the summary's count line: "Run 1 interrupted in 5.2s: 12 succeeded, ...".
var summaryLine = regexp.MustCompile(`Run \d+ \w+ in [^:]+: (.*)\.`)

// summaryCounts parses the summary's counts ("12 succeeded, 3 interrupted, 25 not
// started") by status as flow status names them.
func summaryCounts(t *testing.T, out string) map[string]int {
	t.Helper()
	m := summaryLine.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no summary line in:\n%s", out)
	}
	counts := map[string]int{}
	for _, part := range strings.Split(m[1], ", ") {
		num, name, _ := strings.Cut(part, " ")
		n, err := strconv.Atoi(num)
		if err != nil {
			t.Fatalf("summary part %q: %v", part, err)
		}
		name, _, _ = strings.Cut(name, " (")
		if name == "not started" {
			name = "pending"
		}
		counts[name] += n
	}
	return counts
}

// TestPostgresInterruptDuringOutage (issue 37, finding 7): 40 instances; the server
// stops at once (-m immediate) after 1 s; SIGINT at 5 s: flow exits 130 within
// InterruptWait (10 s) plus a margin, never says the database is back, and its
// summary counts what the state holds once the server is up again.
func TestPostgresInterruptDuringOutage(t *testing.T) {
	binary(t)
	c := pgtest.Shared(t)
	url := pgtest.Database(t) + "&state=outage"
	marks := filepath.Join(t.TempDir(), "marks")
	flowFile := testdata(t, "pg_many.hcl")
	a := newMachine(t)
	tag := newTag(t)

	pa := a.start(t, tag, "run", flowFile, "--state", url, "--parallelism", "4", "--var", "marks="+marks,
		"--var", "n=40", "--var", "nap=0.5")
	waitPGStatus(t, a, newTag(t), url, func(d statusDoc) bool { return countPG(d, "succeeded") >= 4 })
	began := pa.began
	time.Sleep(time.Until(began.Add(time.Second)))
	if err := c.Crash(); err != nil {
		t.Fatal(err)
	}
	resumed := false
	defer func() {
		if !resumed {
			c.Resume()
		}
	}()
	time.Sleep(time.Until(began.Add(5 * time.Second)))
	interrupted := time.Now()
	pa.signal(t, syscall.SIGINT)
	if !pa.wait(60 * time.Second) {
		t.Fatalf("flow did not exit within 60 s of SIGINT during the outage\n%s", pa.describe())
	}
	took := pa.ended.Sub(interrupted)
	t.Logf("exit %d %s after SIGINT\n%s", pa.code(), took.Round(time.Millisecond), pa.describe())
	if pa.code() != 130 {
		t.Errorf("exit code %d after SIGINT during the outage, want 130", pa.code())
	}
	if took > 15*time.Second {
		t.Errorf("flow exited %s after SIGINT, want within InterruptWait (10 s) and a margin", took)
	}
	out := pa.stdout.String() + pa.stderr.String()
	if strings.Contains(out, "is back") {
		t.Errorf("flow said the database was back while the server was down:\n%s", pa.describe())
	}
	said := summaryCounts(t, pa.stdout.String())

	if err := c.Resume(); err != nil {
		t.Fatal(err)
	}
	resumed = true
	doc := waitPGStatus(t, a, newTag(t), url, func(statusDoc) bool { return true })
	held := map[string]int{}
	for _, task := range doc.Tasks {
		held[task.Status]++
	}
	t.Logf("the summary says %v; the state holds %v", said, held)
	if said["succeeded"] != held["succeeded"] {
		t.Errorf("the summary says %d succeeded, the state holds %d", said["succeeded"], held["succeeded"])
	}
	sum := 0
	for _, n := range said {
		sum += n
	}
	if sum != 40 {
		t.Errorf("the summary counts %d instances, want 40", sum)
	}
}

// stoppedHolder starts writer A on machine a: a run of 400 instances at parallelism 4
// on a new database's state name, its marks in marks; once 20 succeeded it stops A
// (SIGSTOP, A alone: its tasks go on) and ends its session from machine b, as a
// partition or the server's timeout would. The caller continues A (SIGCONT).
func stoppedHolder(t *testing.T, name string) (url, marks string, b machine, tagA, tagB string, pa *proc, stopped time.Time) {
	t.Helper()
	binary(t)
	c := pgtest.Shared(t)
	url = pgtest.Database(t) + "&state=" + name
	marks = filepath.Join(t.TempDir(), "marks")
	a := newMachine(t)
	b = newMachine(t)
	tagA, tagB = newTag(t), newTag(t)
	pa = a.start(t, tagA, "run", testdata(t, "pg_many.hcl"), "--state", url, "--parallelism", "4", "--var", "marks="+marks)
	waitPGStatus(t, b, tagB, url, func(d statusDoc) bool { return countPG(d, "succeeded") >= 20 })
	if err := syscall.Kill(pa.pid(), syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped = time.Now()
	t.Setenv("HOME", b.home)
	if r, ended := endHolderSession(t, c, tagB, b.dir, url, pa.pid()); !ended {
		syscall.Kill(pa.pid(), syscall.SIGCONT)
		t.Fatalf("state lock while A is stopped: not A's\n%s", r.desc)
	}
	return url, marks, b, tagA, tagB, pa, stopped
}
