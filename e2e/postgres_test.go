package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flowdev/flow/internal/pgtest"
)

// The PostgreSQL e2e tests run flow processes standing for two machines (their
// own HOME and working directory each) on one state in a throwaway cluster
// (internal/pgtest). The lab is testdata/pg_lab.hcl: exec tasks whose objects are
// files and whose every execution leaves a mark (the busybox LXD lab is not used
// here: exec tasks with marker files show the same state behaviour in seconds).

// machine is one of the two: its working directory and HOME.
type machine struct{ dir, home string }

func newMachine(t *testing.T) machine {
	m := machine{dir: t.TempDir(), home: t.TempDir()}
	return m
}

// flow runs flow on machine m to completion.
func (m machine) flow(t *testing.T, tag string, args ...string) result {
	t.Helper()
	t.Setenv("HOME", m.home)
	return runFlow(t, tag, m.dir, 60*time.Second, args...)
}

// start starts flow on machine m.
func (m machine) start(t *testing.T, tag string, args ...string) *proc {
	t.Helper()
	t.Setenv("HOME", m.home)
	return start(t, tag, m.dir, args...)
}

type pgLab struct {
	url, marks, objects, flowFile string
	vars                          []string
}

func newPGLab(t *testing.T, name string) pgLab {
	dir := t.TempDir()
	l := pgLab{url: pgtest.Database(t) + "&state=" + name, marks: filepath.Join(dir, "marks"),
		objects: filepath.Join(dir, "objects"), flowFile: testdata(t, "pg_lab.hcl")}
	l.vars = []string{"--var", "marks=" + l.marks, "--var", "objects=" + l.objects}
	return l
}

func (l pgLab) markCounts(t *testing.T) map[string]int {
	data, err := os.ReadFile(l.marks)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	n := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if line != "" {
			n[line]++
		}
	}
	return n
}

// markOf is the mark line of an instance address: exec.node["n1"] -> "node n1".
func markOf(addr string) string {
	addr = strings.TrimPrefix(addr, "exec.")
	name, key, ok := strings.Cut(addr, "[")
	if !ok {
		return name
	}
	return name + " " + strings.Trim(key, `"[]`)
}

// waitStatus polls status from m until ok says so, returning the last document.
func waitPGStatus(t *testing.T, m machine, tag, url string, ok func(statusDoc) bool) statusDoc {
	t.Helper()
	return waitPGStatusFor(t, m, tag, url, 30*time.Second, ok)
}

func waitPGStatusFor(t *testing.T, m machine, tag, url string, limit time.Duration, ok func(statusDoc) bool) statusDoc {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		r := m.flow(t, tag, "status", "--json", "--state", url)
		if r.code == 0 {
			doc, err := decodeStatus(r.stdout)
			if err != nil {
				t.Fatalf("status from the other machine: %v\n%s", err, r.desc)
			}
			if ok(doc) {
				return doc
			}
		} else if !strings.Contains(r.stderr, "nothing has run") && !strings.Contains(r.stderr, "no state") && !strings.Contains(r.stderr, "no runs") {
			t.Fatalf("status from the other machine failed:\n%s", r.desc)
		}
		if time.Now().After(deadline) {
			t.Fatalf("status did not get there within %s; last:\n%s", limit, r.desc)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func countPG(doc statusDoc, status string) int {
	n := 0
	for _, task := range doc.Tasks {
		if task.Status == status {
			n++
		}
	}
	return n
}

// TestPostgresTwoMachines: A runs the lab on a PostgreSQL state; B's status and logs
// follow it; B's run is refused naming A; A is SIGKILLed mid-run; B resumes and
// finishes, running no instance recorded as succeeded again; B destroys.
func TestPostgresTwoMachines(t *testing.T) {
	binary(t)
	lab := newPGLab(t, "lab")
	a, b := newMachine(t), newMachine(t)
	tagA, tagB := newTag(t), newTag(t)

	pa := a.start(t, tagA, append([]string{"run", lab.flowFile, "--state", lab.url, "--parallelism", "2"}, lab.vars...)...)
	doc := waitPGStatus(t, b, tagB, lab.url, func(d statusDoc) bool { return countPG(d, "succeeded") >= 2 })
	if doc.Status != "running" {
		t.Errorf("B sees run status %q while A runs, want running", doc.Status)
	}
	if r := b.flow(t, tagB, "logs", "exec.net", "--state", lab.url); r.code != 0 || strings.TrimSpace(r.stdout) != "net" {
		t.Errorf("B's logs of exec.net while A runs:\n%s", r.desc)
	}
	if r := b.flow(t, tagB, "runs", "--state", lab.url); r.code != 0 || !strings.Contains(r.stdout, "running") {
		t.Errorf("B's runs while A runs:\n%s", r.desc)
	}
	r := b.flow(t, tagB, append([]string{"run", lab.flowFile, "--state", lab.url}, lab.vars...)...)
	host, _ := os.Hostname()
	if r.code == 0 || !strings.Contains(r.stderr, fmt.Sprintf("pid %d", pa.pid())) || !strings.Contains(r.stderr, host) {
		t.Fatalf("B's run while A holds the state was not refused naming A (pid %d):\n%s", pa.pid(), r.desc)
	}
	if strings.Contains(r.stderr, pgtest.Password) {
		t.Errorf("the refusal shows the password:\n%s", r.desc)
	}
	if r := b.flow(t, tagB, "state", "lock", "--state", lab.url); r.code != 0 || !strings.Contains(r.stdout, fmt.Sprintf("pid %d", pa.pid())) {
		t.Errorf("B's flow state lock does not name A:\n%s", r.desc)
	}

	// SIGKILL A (and its tasks, as a crash of its machine would).
	doc = waitPGStatus(t, b, tagB, lab.url, func(d statusDoc) bool { return countPG(d, "succeeded") >= 5 })
	pa.killGroup()
	<-pa.done
	killTagged(tagA)
	doc = waitPGStatus(t, b, tagB, lab.url, func(statusDoc) bool { return true })
	if doc.Status != "interrupted" {
		t.Errorf("after A's SIGKILL B sees %q, want interrupted", doc.Status)
	}
	before := lab.markCounts(t)
	var done []string
	for _, task := range doc.Tasks {
		if task.Status == "succeeded" {
			done = append(done, task.Address)
		}
	}
	if r := b.flow(t, tagB, "resume", "--state", lab.url); r.code != 0 {
		t.Fatalf("B's resume after A's SIGKILL:\n%s", r.desc)
	}
	after := lab.markCounts(t)
	for _, addr := range done {
		if after[markOf(addr)] != before[markOf(addr)] {
			t.Errorf("%s, succeeded before the kill, ran again on B (%d -> %d)", addr, before[markOf(addr)], after[markOf(addr)])
		}
	}
	doc = waitPGStatus(t, b, tagB, lab.url, func(statusDoc) bool { return true })
	if doc.Status != "succeeded" || countPG(doc, "succeeded") != 13 {
		t.Fatalf("after B's resume: %s with %d succeeded", doc.Status, countPG(doc, "succeeded"))
	}
	objs, _ := filepath.Glob(filepath.Join(lab.objects, "*"))
	if len(objs) != 13 {
		t.Errorf("%d objects after the resume, want 13", len(objs))
	}
	// A's status, from A's directory, agrees.
	if r := a.flow(t, tagA, "status", "--state", lab.url); r.code != 0 || !strings.Contains(r.stdout, "succeeded") {
		t.Errorf("A's status:\n%s", r.desc)
	}

	if r := b.flow(t, tagB, "destroy", "--auto-approve", "--state", lab.url); r.code != 0 {
		t.Fatalf("B's destroy:\n%s", r.desc)
	}
	objs, _ = filepath.Glob(filepath.Join(lab.objects, "*"))
	if len(objs) != 0 {
		t.Errorf("objects left after the destroy: %v", objs)
	}
}

// lockDoc is `flow state lock --json`.
type lockDoc struct {
	Held   bool `json:"held"`
	Holder *struct {
		PID        int    `json:"pid"`
		BackendPID uint32 `json:"backend_pid"`
		Epoch      int64  `json:"epoch"`
	} `json:"holder"`
}

// TestPostgresFencing: A holds the state and is SIGSTOPped; its session is ended (as a
// partition or the server's timeout would); B takes over and finishes; A, continued,
// commits nothing.
func TestPostgresFencing(t *testing.T) {
	binary(t)
	c := pgtest.Shared(t)
	lab := newPGLab(t, "fence")
	a, b := newMachine(t), newMachine(t)
	tagA, tagB := newTag(t), newTag(t)

	pa := a.start(t, tagA, append([]string{"run", lab.flowFile, "--state", lab.url, "--parallelism", "2"}, lab.vars...)...)
	waitPGStatus(t, b, tagB, lab.url, func(d statusDoc) bool { return countPG(d, "succeeded") >= 3 })
	checkFenced(t, c, b, tagB, pa, lab.url)
}

// checkFenced SIGSTOPs A (pa, holding url), ends its database session as a partition
// or the server's timeout would, lets B resume and finish, continues A and checks that
// A commits nothing and stops saying the state was taken over.
func checkFenced(t *testing.T, c *pgtest.Cluster, b machine, tagB string, pa *proc, url string) {
	t.Helper()
	if err := syscall.Kill(-pa.pid(), syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	if r, ended := endHolderSession(t, c, tagB, b.dir, url, pa.pid()); !ended {
		t.Fatalf("state lock while A is stopped: not A's\n%s", r.desc)
	}
	if r := b.flow(t, tagB, "resume", "--state", url); r.code != 0 {
		syscall.Kill(-pa.pid(), syscall.SIGCONT)
		t.Fatalf("B's resume after A's session ended:\n%s", r.desc)
	}
	snapshot := func() string {
		r := b.flow(t, tagB, "status", "--json", "--state", url)
		runs := b.flow(t, tagB, "runs", "--state", url)
		return r.stdout + runs.stdout
	}
	taken := snapshot()
	if err := syscall.Kill(-pa.pid(), syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	if !pa.wait(60 * time.Second) {
		t.Fatalf("A did not stop after it was continued\n%s", pa.describe())
	}
	if pa.code() == 0 {
		t.Errorf("A finished successfully after B took over:\n%s", pa.describe())
	}
	if !strings.Contains(pa.stderr.String()+pa.stdout.String(), "taken over") {
		t.Errorf("A does not say the state was taken over:\n%s", pa.describe())
	}
	t.Logf("A after it was continued: exit %d\n%s", pa.code(), pa.stderr.String())
	if now := snapshot(); now != taken {
		t.Errorf("A committed after B took over:\nbefore:\n%s\nafter:\n%s", taken, now)
	}
}

// TestPostgresRestartMidRun: the server restarts (immediate shutdown, as a crash)
// while a run commits; the run waits, reconnects, takes its lock back and finishes,
// and every instance ran once.
func TestPostgresRestartMidRun(t *testing.T) {
	binary(t)
	c := pgtest.Shared(t)
	lab := newPGLab(t, "restart")
	a := newMachine(t)
	tag := newTag(t)
	pa := a.start(t, tag, append([]string{"run", lab.flowFile, "--state", lab.url, "--parallelism", "2"}, lab.vars...)...)
	waitPGStatus(t, a, newTag(t), lab.url, func(d statusDoc) bool { return countPG(d, "succeeded") >= 3 })
	if err := c.Restart(2 * time.Second); err != nil {
		t.Fatal(err)
	}
	if !pa.wait(90 * time.Second) {
		t.Fatalf("the run did not finish after the restart\n%s", pa.describe())
	}
	if pa.code() != 0 {
		t.Fatalf("the run failed after the server restarted:\n%s", pa.describe())
	}
	t.Logf("stderr of the run:\n%s", pa.stderr.String())
	if !strings.Contains(pa.stderr.String(), "waiting for it") || !strings.Contains(pa.stderr.String(), "is back") {
		t.Errorf("the run did not say it waited for the database:\n%s", pa.describe())
	}
	doc := waitPGStatus(t, a, tag, lab.url, func(statusDoc) bool { return true })
	if doc.Status != "succeeded" || countPG(doc, "succeeded") != 13 {
		t.Errorf("after the restart: %s with %d succeeded", doc.Status, countPG(doc, "succeeded"))
	}
	for mark, n := range lab.markCounts(t) {
		if n != 1 {
			t.Errorf("%s ran %d times", mark, n)
		}
	}
	if r := a.flow(t, tag, "runs", "--state", lab.url); strings.Count(r.stdout, "succeeded") != 1 {
		t.Errorf("runs after the restart:\n%s", r.desc)
	}
}

// TestPostgresBadAddress: an unreachable server, a wrong password, a missing database
// and a malformed URL each fail a run at once with one line naming the problem, and
// create nothing.
func TestPostgresBadAddress(t *testing.T) {
	binary(t)
	c := pgtest.Shared(t)
	lab := newPGLab(t, "bad")
	a := newMachine(t)
	tag := newTag(t)
	good := lab.url
	tests := []struct{ name, url, want string }{
		{"unreachable", fmt.Sprintf("postgres://flow@127.0.0.1:%d/flow?state=x", c.Port+1), fmt.Sprintf("127.0.0.1:%d", c.Port+1)},
		{"wrong password", strings.Replace(good, pgtest.Password, "nope", 1), "wrong password"},
		{"missing database", strings.Replace(c.URL("nodb"), "?", "?state=x&", 1), `database "nodb"`},
		{"malformed", "postgres://flow@127.0.0.1:99999999/flow", "malformed PostgreSQL URL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, cmd := range [][]string{append([]string{"run", lab.flowFile, "--state", tt.url}, lab.vars...), {"status", "--state", tt.url}} {
				r := a.flow(t, tag, cmd...)
				lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
				if r.code == 0 || !strings.Contains(r.stderr, tt.want) || len(lines) != 1 || r.took > 20*time.Second {
					t.Errorf("flow %s: want one line naming %q\n%s", cmd[0], tt.want, r.desc)
				}
				if strings.Contains(r.stderr, pgtest.Password) || strings.Contains(r.stderr, "nope") {
					t.Errorf("the error shows the password:\n%s", r.desc)
				}
			}
		})
	}
	if out, _ := c.SQL("postgres", "SELECT count(*) FROM pg_database WHERE datname = 'nodb'"); out != "0" {
		t.Error("a database was created")
	}
	if _, err := os.Stat(lab.marks); !os.IsNotExist(err) {
		t.Error("a task ran")
	}
}

// TestPostgresMigrate: flow state migrate moves a file's state to PostgreSQL, where
// status reads it and a resume continues it; the file refuses writers from then on;
// and back to a new file.
func TestPostgresMigrate(t *testing.T) {
	binary(t)
	lab := newPGLab(t, "migrated")
	a := newMachine(t)
	tag := newTag(t)
	file := filepath.Join(a.dir, "lab.db")
	// A run interrupted half way, in a file.
	p := a.start(t, tag, append([]string{"run", lab.flowFile, "--state", file, "--parallelism", "1"}, lab.vars...)...)
	deadline := time.Now().Add(30 * time.Second)
	for lab.markCounts(t)["node n3"] == 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	p.signal(t, syscall.SIGINT)
	if !p.wait(30 * time.Second) {
		t.Fatal("the run did not stop on SIGINT")
	}
	before := a.flow(t, tag, "status", "--json", "--state", file)
	if r := a.flow(t, tag, "state", "migrate", "--state", file, "--to", lab.url); r.code != 0 || !strings.Contains(r.stdout, "Copied 1 run") {
		t.Fatalf("migrate to PostgreSQL:\n%s", r.desc)
	}
	if after := a.flow(t, tag, "status", "--json", "--state", lab.url); after.stdout != before.stdout {
		t.Errorf("status differs after the migration:\nfile:\n%s\nPostgreSQL:\n%s", before.stdout, after.stdout)
	}
	if r := a.flow(t, tag, "resume", "--state", file); r.code == 0 || !strings.Contains(r.stderr, "was migrated to") {
		t.Errorf("resume on the migrated file:\n%s", r.desc)
	}
	done := lab.markCounts(t)
	if r := a.flow(t, tag, "resume", "--state", lab.url); r.code != 0 {
		t.Fatalf("resume on PostgreSQL:\n%s", r.desc)
	}
	doc, err := decodeStatus(before.stdout)
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range doc.Tasks {
		if task.Status == "succeeded" && lab.markCounts(t)[markOf(task.Address)] != done[markOf(task.Address)] {
			t.Errorf("%s, succeeded in the file before the migration, ran again", task.Address)
		}
	}
	back := filepath.Join(a.dir, "back.db")
	if r := a.flow(t, tag, "state", "migrate", "--state", lab.url, "--to", back); r.code != 0 {
		t.Fatalf("migrate back to a file:\n%s", r.desc)
	}
	pgStatus := a.flow(t, tag, "status", "--json", "--state", lab.url)
	if r := a.flow(t, tag, "status", "--json", "--state", back); r.stdout != pgStatus.stdout || !strings.Contains(r.stdout, `"succeeded"`) {
		t.Errorf("status of the file migrated back:\n%s\nwant\n%s", r.stdout, pgStatus.stdout)
	}
	if r := a.flow(t, tag, "state", "migrate", "--state", back, "--to", lab.url); r.code == 0 {
		t.Errorf("migrate to a state that holds runs was not refused:\n%s", r.desc)
	}
}

// The busybox lab on a PostgreSQL state: testdata/fault-lxd.hcl (the local lab's LXD
// steps: image, profile, launch, file push, exec, proxy device, a wait through it)
// under names and ports of this test's own.
const pgLabPrefix = "pg32"

var pgLabMembers = map[string]int{"a": 16561, "b": 16562, "c": 16563}

// TestPostgresBusyboxLab: A brings the busybox lab up on a PostgreSQL state; B's
// status and logs follow it; B's run is refused naming A; A is SIGKILLed once a member
// is up; B resumes and finishes, no member recorded as launched is created again
// (LXD's own events count the creations); B destroys the lab. Then the fencing test
// on the lab: A runs it again, is SIGSTOPped and loses its session, B takes over and
// finishes, A continued commits nothing; B destroys the lab.
func TestPostgresBusyboxLab(t *testing.T) {
	srv := requireLXD(t)
	binary(t)
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	removePrefixedLab(t, pgLabPrefix, pgLabMembers)
	t.Cleanup(func() { removePrefixedLab(t, pgLabPrefix, pgLabMembers) })
	url := pgtest.Database(t) + "&state=busybox"
	members := "members={"
	for m, port := range pgLabMembers {
		members += fmt.Sprintf(" %s = %d,", m, port)
	}
	members = strings.TrimSuffix(members, ",") + " }"
	a, b := newMachine(t), newMachine(t)
	tagA, tagB := newTag(t), newTag(t)
	events := watchLXDCreations(t, srv, func(name string) bool { return strings.HasPrefix(name, pgLabPrefix+"-") })

	run := []string{"run", testdata(t, "fault-lxd.hcl"), "--state", url, "--parallelism", "2",
		"--var", "root=" + root, "--var", "prefix=" + pgLabPrefix, "--var", members}
	pa := a.start(t, tagA, run...)
	launched := func(d statusDoc) int {
		n := 0
		for _, task := range d.Tasks {
			if strings.HasPrefix(task.Address, "lxd_launch.member") && task.Status == "succeeded" {
				n++
			}
		}
		return n
	}
	doc := waitPGStatusFor(t, b, tagB, url, 4*time.Minute, func(d statusDoc) bool { return launched(d) >= 1 })
	if doc.Status != "running" {
		t.Errorf("B sees %q while A runs", doc.Status)
	}
	if r := b.flow(t, tagB, "logs", "exec.busybox_image", "--state", url); r.code != 0 || !strings.Contains(r.stdout, "busybox") {
		t.Errorf("B's logs of exec.busybox_image while A runs:\n%s", r.desc)
	}
	if r := b.flow(t, tagB, run...); r.code == 0 || !strings.Contains(r.stderr, fmt.Sprintf("pid %d", pa.pid())) {
		t.Fatalf("B's run while A holds the state was not refused naming A (pid %d):\n%s", pa.pid(), r.desc)
	}
	pa.killGroup()
	<-pa.done
	killTagged(tagA)
	doc = waitPGStatusFor(t, b, tagB, url, time.Minute, func(statusDoc) bool { return true })
	var up []string
	for _, task := range doc.Tasks {
		if strings.HasPrefix(task.Address, "lxd_launch.member") && task.Status == "succeeded" {
			up = append(up, task.Address)
		}
	}
	t.Logf("A SIGKILLed with %d of %d members launched: %v", len(up), len(pgLabMembers), up)

	if r := b.flow(t, tagB, "resume", "--state", url); r.code != 0 {
		t.Fatalf("B's resume:\n%s", r.desc)
	}
	created := events.counts(t)
	for _, addr := range up {
		m := strings.Trim(strings.TrimPrefix(addr, "lxd_launch.member"), `["]`)
		if n := created[pgLabPrefix+"-"+m]; n != 1 {
			t.Errorf("%s, launched before the kill, was created %d times", addr, n)
		}
	}
	for m, port := range pgLabMembers {
		if body := httpGet(t, fmt.Sprintf("http://127.0.0.1:%d/", port)); !strings.Contains(body, "member "+m) {
			t.Errorf("port %d answered %q, want member %s's page", port, body, m)
		}
	}
	t.Logf("creations: %v", created)

	if r := b.flow(t, tagB, "destroy", "--auto-approve", "--state", url); r.code != 0 {
		t.Fatalf("B's destroy:\n%s", r.desc)
	}

	// The fencing test: A brings the lab up again, is SIGSTOPped holding the state
	// once a member is up, loses its session; B takes over and finishes; A, continued,
	// commits nothing.
	tagA2 := newTag(t)
	pa = a.start(t, tagA2, run...)
	waitPGStatusFor(t, b, tagB, url, 4*time.Minute, func(d statusDoc) bool { return d.Status == "running" && launched(d) >= 1 })
	checkFenced(t, pgtest.Shared(t), b, tagB, pa, url)
	for m, port := range pgLabMembers {
		if body := httpGet(t, fmt.Sprintf("http://127.0.0.1:%d/", port)); !strings.Contains(body, "member "+m) {
			t.Errorf("after the takeover, port %d answered %q, want member %s's page", port, body, m)
		}
	}

	if r := b.flow(t, tagB, "destroy", "--auto-approve", "--state", url); r.code != 0 {
		t.Fatalf("B's destroy:\n%s", r.desc)
	}
	for m := range pgLabMembers {
		if _, _, err := srv.GetInstance(pgLabPrefix + "-" + m); err == nil {
			t.Errorf("%s-%s survived the destroy", pgLabPrefix, m)
		}
	}
}

// endHolderSession ends the database session of the writer that holds the state at url
// when that is the process pid, as a partition or the server's timeout would: it asks
// `flow state lock --json` (from dir) for the holder's backend and terminates it. It
// reports whether it did, with what flow state lock said.
func endHolderSession(t *testing.T, c *pgtest.Cluster, tag, dir, url string, pid int) (result, bool) {
	t.Helper()
	r := runFlow(t, tag, dir, time.Minute, "state", "lock", "--json", "--state", url)
	var lock lockDoc
	if err := json.Unmarshal([]byte(r.stdout), &lock); err != nil || !lock.Held || lock.Holder == nil || lock.Holder.PID != pid {
		return r, false
	}
	if _, err := c.SQL("postgres", fmt.Sprintf("SELECT pg_terminate_backend(%d)", lock.Holder.BackendPID)); err != nil {
		t.Fatal(err)
	}
	return r, true
}
