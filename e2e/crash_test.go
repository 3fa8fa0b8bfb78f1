package e2e

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/flowdev/flow/internal/pgtest"
)

// The crash flow (testdata/crash.hcl): a root, a chain s1..s4 per member, a join.
var (
	crashMembers = []string{"m1", "m2", "m3", "m4"}
	crashSteps   = []string{"s1", "s2", "s3", "s4"}
)

const (
	crashTrials      = 24
	crashTrialsPG    = 8
	defaultCrashSeed = 20250611
	maxInvocations   = 10
	maxKillAfter     = 1500 * time.Millisecond
	crashParallelism = "4"
)

// crashAddresses returns every instance address of the crash flow and its direct
// dependencies.
func crashAddresses() (addrs []string, deps map[string][]string) {
	deps = map[string][]string{"exec.root": nil}
	addrs = []string{"exec.root"}
	var last []string
	for _, m := range crashMembers {
		prev := "exec.root"
		for _, s := range crashSteps {
			a := fmt.Sprintf("exec.%s[%q]", s, m)
			addrs = append(addrs, a)
			deps[a] = []string{prev}
			prev = a
		}
		last = append(last, prev)
	}
	addrs = append(addrs, "exec.join")
	deps["exec.join"] = last
	sort.Strings(addrs)
	return addrs, deps
}

// markAddress maps a line of the marks file ("root", "join", "s2 m3") to its address.
func markAddress(line string) (string, bool) {
	switch line {
	case "root", "join":
		return "exec." + line, true
	}
	step, member, ok := strings.Cut(line, " ")
	if !ok {
		return "", false
	}
	return fmt.Sprintf("exec.%s[%q]", step, member), true
}

// readMarks returns the addresses of the marks file in order (nil if it does not exist).
func readMarks(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		addr, ok := markAddress(sc.Text())
		if !ok {
			t.Fatalf("%s: unexpected line %q", path, sc.Text())
		}
		out = append(out, addr)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func countMarks(marks []string) map[string]int {
	n := map[string]int{}
	for _, a := range marks {
		n[a]++
	}
	return n
}

// killMoment picks when to SIGKILL an invocation with left of all instances still to
// run: a quarter of the kills come within the first 40ms (before or while the state
// file is created and the run recorded), the rest anywhere in the time the remaining
// work takes, up to maxKillAfter.
func killMoment(rng *rand.Rand, left, all int) time.Duration {
	if rng.IntN(4) == 0 {
		return time.Duration(rng.Int64N(int64(40 * time.Millisecond)))
	}
	span := max(maxKillAfter*time.Duration(left)/time.Duration(all), 200*time.Millisecond)
	return time.Duration(rng.Int64N(int64(span)))
}

func crashSeed(t *testing.T) uint64 {
	t.Helper()
	if s := os.Getenv("E2E_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("E2E_SEED=%q: %v", s, err)
		}
		return v
	}
	return defaultCrashSeed
}

// TestCrashResume SIGKILLs `flow run` and `flow resume` at random moments and checks
// that the state file always opens, that resuming always finishes, that every task
// ran, and that no task recorded as succeeded ever ran again.
//
// Replay a failure with E2E_SEED=<seed> (and E2E_TRIAL=<n> to run only trial n). The
// kill moments are the same on a replay; where they fall in the run is up to the
// machine.
func TestCrashResume(t *testing.T) {
	crashResume(t, crashTrials, func(t *testing.T, dir string) string { return filepath.Join(dir, "state.db") })
}

// TestCrashResumePostgres is TestCrashResume on a state in PostgreSQL (a throwaway
// cluster, internal/pgtest), with fewer trials.
func TestCrashResumePostgres(t *testing.T) {
	url := pgtest.Database(t)
	n := 0
	crashResume(t, crashTrialsPG, func(t *testing.T, dir string) string {
		n++
		return fmt.Sprintf("%s&state=crash%d", url, n)
	})
}

func crashResume(t *testing.T, trials int, newState func(t *testing.T, dir string) string) {
	binary(t)
	seed := crashSeed(t)
	only := -1
	if s := os.Getenv("E2E_TRIAL"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			t.Fatalf("E2E_TRIAL=%q: %v", s, err)
		}
		only = n
	}
	t.Logf("seed %d (replay with E2E_SEED=%d; one trial with E2E_TRIAL=N)", seed, seed)
	var total crashTotals
	for i := range trials {
		if only >= 0 && i != only {
			continue
		}
		ok := t.Run(fmt.Sprintf("trial%02d", i), func(t *testing.T) {
			crashTrial(t, seed, i, &total, newState)
		})
		if !ok {
			t.Logf("trial %d failed: replay with E2E_SEED=%d E2E_TRIAL=%d go test -run 'TestCrashResume' ./e2e/", i, seed, i)
		}
	}
	t.Logf("totals: %d invocations, %d kills (%d before the state file existed, %d before a run was recorded), "+
		"%d re-executions of unfinished instances, %d instances seen succeeded after a kill and never re-run",
		total.invocations, total.kills, total.killsNoState, total.killsNoRun, total.reruns, total.protected)
}

type crashTotals struct {
	invocations, kills, killsNoState, killsNoRun, reruns, protected int
}

func crashTrial(t *testing.T, seed uint64, trial int, total *crashTotals, newState func(t *testing.T, dir string) string) {
	rng := rand.New(rand.NewPCG(seed, uint64(trial)))
	dir := t.TempDir()
	state := newState(t, dir)
	marks := filepath.Join(dir, "marks")
	flowFile := testdata(t, "crash.hcl")
	tag := newTag(t)
	addrs, deps := crashAddresses()
	vars := []string{"--var", "marks=" + marks, "--var", "seed=" + strconv.Itoa(rng.IntN(1000))}
	kills := 1 + rng.IntN(3)

	// seen[addr] is the number of marks addr had when a status after a kill first
	// showed it succeeded; from then on it must never change.
	seen := map[string]int{}
	hasRun, finished := false, false
	var lastOK result
	var log []string
	invocations, killsDone := 0, 0

	for !finished {
		if invocations == maxInvocations {
			t.Fatalf("not finished after %d invocations:\n  %s", invocations, strings.Join(log, "\n  "))
		}
		var args []string
		if hasRun {
			args = []string{"resume", "--state", state, "--parallelism", crashParallelism}
			if rng.IntN(2) == 0 { // giving the recorded values again must change nothing
				args = append(args, vars...)
			}
		} else {
			args = append([]string{"run", flowFile, "--state", state, "--parallelism", crashParallelism}, vars...)
		}
		killAfter := time.Duration(-1)
		if killsDone < kills {
			killAfter = killMoment(rng, len(addrs)-len(seen), len(addrs))
		}
		invocations++
		p := start(t, tag, dir, args...)
		entry := fmt.Sprintf("#%d %s", invocations, args[0])
		if killAfter >= 0 {
			entry += fmt.Sprintf(" kill@%dms", killAfter.Milliseconds())
			if !p.wait(killAfter) {
				p.killGroup()
			}
		}
		if !p.wait(30 * time.Second) {
			p.killGroup()
			<-p.done
			t.Fatalf("%s: still running after 30s\n%s", entry, p.describe())
		}

		if !p.signaled() {
			// It ended on its own (before the kill, if any): it must have succeeded.
			entry += fmt.Sprintf(" -> exit %d after %dms", p.code(), p.ended.Sub(p.began).Milliseconds())
			log = append(log, entry)
			if p.code() != 0 {
				t.Fatalf("%s: unexpected exit code %d\n%s", entry, p.code(), p.describe())
			}
			finished = true
			lastOK = result{stdout: p.stdout.String(), desc: p.describe()}
			break
		}

		// Killed. A crash of the machine would take the tasks with it; so do we, so
		// that nothing writes a mark after we look (exec tasks run in their own process
		// groups and outlive a SIGKILLed flow).
		killsDone++
		total.kills++
		orphans := killTagged(tag)
		counts := countMarks(readMarks(t, marks))
		r := runFlow(t, tag, dir, 10*time.Second, "status", "--json", "--state", state)
		switch {
		case r.code != 0 && stateMissing(state, r):
			// Killed before the state file was created: status must say so.
			if r.code != 2 || !strings.Contains(r.stderr, "no state file") {
				t.Fatalf("%s: no state file, but status did not say so:\n%s", entry, r.desc)
			}
			if len(counts) != 0 {
				t.Fatalf("%s: tasks ran (%v) although no state file exists", entry, counts)
			}
			entry += " -> killed; no state file yet"
			total.killsNoState++
			hasRun = false
		case r.code != 0 && strings.Contains(r.stderr, "no runs in"):
			// Killed after the state file was created, before the run was recorded.
			if len(counts) != 0 {
				t.Fatalf("%s: tasks ran (%v) although no run is recorded", entry, counts)
			}
			entry += " -> killed; state file holds no run yet"
			total.killsNoRun++
			hasRun = false
		case r.code != 0:
			t.Fatalf("%s: the state file does not open after a SIGKILL (status exited %d)\n%s", entry, r.code, r.desc)
		default:
			doc, err := decodeStatus(r.stdout)
			if err != nil {
				t.Fatalf("%s: after a SIGKILL: %v\n%s", entry, err, r.desc)
			}
			if doc.RunID != 1 {
				t.Fatalf("%s: status shows run %d, want run 1 (resume must continue the run)\n%s", entry, doc.RunID, r.desc)
			}
			hasRun = true
			succeeded, running := 0, 0
			for _, task := range doc.Tasks {
				if _, ok := deps[task.Address]; !ok {
					t.Fatalf("%s: status lists unknown instance %s", entry, task.Address)
				}
				if task.Status == "running" {
					running++ // the record of a dead process; not asserted, only counted
				}
				if task.Status != "succeeded" {
					continue
				}
				succeeded++
				n := counts[task.Address]
				if n == 0 {
					t.Errorf("%s: %s is recorded as succeeded but never ran", entry, task.Address)
				}
				if before, ok := seen[task.Address]; ok && before != n {
					t.Errorf("%s: %s was already succeeded with %d execution(s) and ran again (now %d)", entry, task.Address, before, n)
				}
				if _, ok := seen[task.Address]; !ok {
					seen[task.Address] = n
				}
			}
			// A success is durable before its dependents start, so no durable success
			// may have a dependency that is not durably succeeded.
			byAddr := doc.byAddress()
			for _, task := range doc.Tasks {
				for _, d := range deps[task.Address] {
					if task.Status == "succeeded" && byAddr[d].Status != "succeeded" {
						t.Errorf("%s: %s is recorded as succeeded but its dependency %s is %q", entry, task.Address, d, byAddr[d].Status)
					}
				}
			}
			entry += fmt.Sprintf(" -> killed; run %s, %d/%d succeeded", doc.Status, succeeded, len(addrs))
			if running > 0 {
				entry += fmt.Sprintf(", %d still shown running", running)
			}
			switch doc.Status {
			case "interrupted":
			case "succeeded": // the kill landed after the run was recorded as finished
				if succeeded != len(addrs) {
					t.Fatalf("%s: run succeeded with %d of %d instances succeeded\n%s", entry, succeeded, len(addrs), r.desc)
				}
				finished = true
			default:
				t.Fatalf("%s: a killed run must show as interrupted (or succeeded), not %q\n%s", entry, doc.Status, r.desc)
			}
		}
		if orphans > 0 {
			entry += fmt.Sprintf(", %d orphaned task process(es) killed", orphans)
		}
		log = append(log, entry)
	}
	total.invocations += invocations

	// The end: everything succeeded, in the one run, each task ran at least once, and
	// nothing seen succeeded ran again.
	final := status(t, tag, dir, state)
	if final.Status != "succeeded" || final.RunID != 1 {
		t.Errorf("final status: run %d %s, want run 1 succeeded", final.RunID, final.Status)
	}
	got := final.byAddress()
	if len(final.Tasks) != len(addrs) {
		t.Errorf("final status lists %d instances, want %d", len(final.Tasks), len(addrs))
	}
	for _, a := range addrs {
		if task, ok := got[a]; !ok || task.Status != "succeeded" {
			t.Errorf("final status of %s: %+v, want succeeded", a, task)
		}
	}

	order := readMarks(t, marks)
	counts := countMarks(order)
	reruns := 0
	for _, a := range addrs {
		n := counts[a]
		switch {
		case n == 0:
			t.Errorf("%s never ran", a)
		case n > invocations:
			t.Errorf("%s ran %d times in %d invocations", a, n, invocations)
		}
		reruns += max(n-1, 0)
		if before, ok := seen[a]; ok && n != before {
			t.Errorf("%s was recorded as succeeded after %d execution(s) but ran %d times in the end", a, before, n)
		}
	}
	total.reruns += reruns
	total.protected += len(seen)

	// A task starts only after each dependency succeeded, so its first mark comes
	// after a mark of each dependency.
	first := map[string]int{}
	for i, a := range order {
		if _, ok := first[a]; !ok {
			first[a] = i
		}
	}
	for _, a := range addrs {
		for _, d := range deps[a] {
			if fa, ok := first[a]; ok && (first[d] > fa || counts[d] == 0) {
				t.Errorf("%s first ran (mark %d) before its dependency %s (mark %d)", a, fa, d, first[d])
			}
		}
	}

	const joined = `joined = "joined s3-m1/s1-m1/s2/s4,s3-m2/s1-m2/s2/s4,s3-m3/s1-m3/s2/s4,s3-m4/s1-m4/s2/s4"`
	if lastOK.desc != "" && !strings.Contains(lastOK.stdout, joined) {
		t.Errorf("the finishing invocation did not print the output %s (restored outputs wrong?)\n%s", joined, lastOK.desc)
	}

	t.Logf("%d kill(s) planned; %s; %d marks, %d re-execution(s), %d instance(s) protected",
		kills, strings.Join(log, "; "), len(order), reruns, len(seen))
	if t.Failed() {
		t.Logf("marks in order: %s", strings.Join(order, " "))
	}
}

// stateMissing reports whether no state exists at loc: no file, or (for a URL) status
// saying there is none.
func stateMissing(loc string, status result) bool {
	if strings.HasPrefix(loc, "postgres") {
		return strings.Contains(status.stderr, "no state file")
	}
	_, err := os.Stat(loc)
	return os.IsNotExist(err)
}
