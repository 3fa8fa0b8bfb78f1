package e2e

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flowdev/flow/engine/ops"
	"github.com/flowdev/flow/engine/state"
	"github.com/flowdev/flow/internal/pgtest"
)

// faultFlow: for each item, base makes the directory m/d.KEY.TAG and top a file in it;
// each undo removes its own, and succeeds when it is gone already, as docs/checkpoints.md
// asks of every task (rmdir fails while top's file is there, so an undo out of
// dependency order shows). A file faults/run-KEY makes top fail after it made its file,
// and faults/undo makes every undo fail: the faults a history injects. Each start of top
// appends to starts the flow process that ran it and when its shell started (clock
// ticks since boot), for the PostgreSQL histories' takeovers.
const faultFlow = `variable "items" {
  type    = set(string)
  default = ["a", "b"]
}

variable "tag" {
  type    = string
  default = "t0"
}

variable "slow" {
  type    = number
  default = 0
}

task "exec" "base" {
  for_each = var.items
  script   = "mkdir -p m/d.${each.key}.${var.tag}"
  undo     = "test ! -e faults/undo && { test ! -d m/d.${each.key}.${var.tag} || rmdir m/d.${each.key}.${var.tag}; }"
}

task "exec" "top" {
  for_each   = var.items
  depends_on = [exec.base]
  script     = "echo \"$PPID $(cut -d' ' -f22 /proc/$$/stat) ${each.key}\" >> starts && sleep ${var.slow} && touch m/d.${each.key}.${var.tag}/top && test ! -e faults/run-${each.key}"
  undo       = "test ! -e faults/undo && rm -f m/d.${each.key}.${var.tag}/top"
}
`

// faultSeeds are the histories make test always walks; one more is drawn from the
// clock each time. FLOW_PROPERTY_SEED walks one seed alone, FLOW_SOAK_SEEDS=N that
// many from the clock (make soak).
var faultSeeds = []int64{1, 37, 2026}

// TestUndoFaultProperty (issue 37): over seeded histories of 40 steps — runs with new
// variables (a shrunk or grown for_each, another tag), --replace, destroys, --move of the
// project, SIGKILLs mid-run and mid-destroy followed by the resume or destroy that
// continues them, and injected faults (an attempt that fails after it made its object,
// undos that fail) switched on and off — once the faults are off a final flow destroy
// succeeds, and then no object any run made is left and every file no run made is
// still there. The seed is printed on failure.
func TestUndoFaultProperty(t *testing.T) {
	for _, seed := range propertySeeds(t, faultSeeds) {
		t.Run(fmt.Sprintf("seed%d", seed), func(t *testing.T) {
			faultHistory(t, seed, 40, nil)
		})
	}
}

// TestUndoFaultPropertyPostgres: the same histories on a state in PostgreSQL, with two
// more faults: another writer takes the state over while the run holding it is stopped
// (its session ended, as a partition would), and the server restarts mid-run. Besides
// the properties above, the writer that was taken over starts no instance once it is
// continued.
func TestUndoFaultPropertyPostgres(t *testing.T) {
	binary(t)
	c := pgtest.Shared(t)
	for _, seed := range propertySeeds(t, faultSeeds[1:2]) {
		t.Run(fmt.Sprintf("seed%d", seed), func(t *testing.T) {
			faultHistory(t, seed, 40, c)
		})
	}
}

// propertySeeds are the seeds of a property test's histories: fixed and one from the
// clock; FLOW_PROPERTY_SEED alone; or FLOW_SOAK_SEEDS=N from the clock (make soak).
func propertySeeds(t *testing.T, fixed []int64) []int64 {
	seeds := append(slices.Clone(fixed), time.Now().UnixNano())
	if s := os.Getenv("FLOW_PROPERTY_SEED"); s != "" {
		seed, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatalf("FLOW_PROPERTY_SEED: %v", err)
		}
		return []int64{seed}
	}
	if s := os.Getenv("FLOW_SOAK_SEEDS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			t.Fatalf("FLOW_SOAK_SEEDS: %v", err)
		}
		seeds = nil
		for i := 0; i < n; i++ {
			seeds = append(seeds, time.Now().UnixNano()+int64(i))
		}
	}
	return seeds
}

// precious are the files no run makes, some named as a run's would be.
var precious = []string{"m/precious", "m/d.z.t0/keep", "m/d.c.t3"}

// faultHistory walks a history of steps drawn from seed, on a state file or, with pg,
// on a new database of that cluster.
func faultHistory(t *testing.T, seed int64, steps int, pg *pgtest.Cluster) {
	rng := rand.New(rand.NewSource(seed))
	root := t.TempDir()
	p := &project{t: t, tag: newTag(t), root: root, dir: filepath.Join(root, "p0"), seed: seed}
	ops := 10
	if pg != nil {
		p.state = pgtest.Database(t) + "&state=p"
		ops = 12
	}
	files := map[string]string{"p.hcl": faultFlow, "faults/.keep": ""}
	for _, f := range precious {
		files[f] = "no run made me"
	}
	writeFiles(t, p.dir, files)
	delete(files, "p.hcl")
	for i := 0; i < steps; i++ {
		switch op := rng.Intn(ops); op {
		case 0, 1:
			p.flow([]int{0, 1}, "run", "p.hcl", "--new", "--move", "--var", randomItems(rng), "--var", randomTag(rng))
		case 2:
			p.flow([]int{0, 1}, "run", "p.hcl", "--new", "--move", "--replace", "exec.base", "--var", randomTag(rng))
		case 3:
			p.flow([]int{0, 1}, "destroy", "--auto-approve", "--flow", p.path())
		case 4:
			p.killAndContinue(rng)
		case 5: // refused (2) after a destroy: a resume continues runs only
			p.flow([]int{0, 1, 2}, "resume", "--flow", p.path())
		case 6, 7:
			p.toggle(fmt.Sprintf("faults/run-%c", 'a'+rng.Intn(3)))
		case 8:
			p.toggle("faults/undo")
		case 9:
			p.move()
		case 10:
			p.takeOver(rng, pg)
		case 11:
			p.restartMidRun(rng, pg)
		}
		p.checkPrecious()
		p.checkRecorded()
	}
	for _, f := range []string{"faults/undo", "faults/run-a", "faults/run-b", "faults/run-c"} {
		os.Remove(filepath.Join(p.dir, f))
	}
	p.log = append(p.log, "faults off")
	p.flow([]int{0}, "destroy", "--auto-approve", "--flow", p.path())
	p.checkPrecious()
	var left []string
	filepath.WalkDir(filepath.Join(p.dir, "m"), func(path string, d os.DirEntry, err error) error {
		rel, _ := filepath.Rel(p.dir, path)
		if err != nil || rel == "m" || slices.Contains(precious, rel) || strings.HasPrefix("m/d.z.t0", rel) {
			return nil
		}
		left = append(left, rel)
		return nil
	})
	if len(left) > 0 {
		p.fail("after the final destroy these objects a run made are left: %v", left)
	}
	var kills, takeovers, restarts int
	for _, l := range p.log {
		kills += strings.Count(l, "-> SIGKILL")
		takeovers += strings.Count(l, "pg_terminate_backend(A)")
		restarts += strings.Count(l, "server restarted")
	}
	t.Logf("seed %d: %d steps, %d SIGKILLs, %d takeovers, %d server restarts", seed, len(p.log), kills, takeovers, restarts)
}

// checkPrecious fails the history if a file no run made is gone.
func (p *project) checkPrecious() {
	for _, f := range precious {
		if !exists(filepath.Join(p.dir, f)) {
			p.fail("%s, which no run made, is gone", f)
		}
	}
}

func (p *project) fail(format string, args ...any) {
	p.t.Helper()
	p.t.Fatalf("seed %d (FLOW_PROPERTY_SEED=%d reruns it), history:\n  %s\n%s", p.seed, p.seed,
		strings.Join(p.log, "\n  "), fmt.Sprintf(format, args...))
}

// toggle creates the fault file rel, or removes it when it is there.
func (p *project) toggle(rel string) {
	path := filepath.Join(p.dir, rel)
	if exists(path) {
		os.Remove(path)
		p.log = append(p.log, "rm "+rel)
		return
	}
	writeFiles(p.t, p.dir, map[string]string{rel: ""})
	p.log = append(p.log, "touch "+rel)
}

// killAndContinue starts a slow run or a destroy, SIGKILLs flow at a random moment and
// continues what it killed as the documented path does: a resume, or destroy again.
func (p *project) killAndContinue(rng *rand.Rand) {
	destroy := rng.Intn(3) == 0
	args := []string{"run", "p.hcl", "--new", "--move", "--var", "slow=0.3", "--var", randomItems(rng), "--var", randomTag(rng)}
	if destroy {
		args = []string{"destroy", "--auto-approve", "--flow", p.path()}
	}
	pr := start(p.t, p.tag, p.dir, p.withState(args)...)
	time.Sleep(time.Duration(30+rng.Intn(600)) * time.Millisecond)
	_ = syscall.Kill(pr.pid(), syscall.SIGKILL)
	pr.wait(10 * time.Second)
	killTagged(p.tag) // what the killed flow left (its task's sleep)
	p.log = append(p.log, strings.Join(args, " ")+" -> SIGKILL")
	if destroy {
		p.flow([]int{0, 1}, "destroy", "--auto-approve", "--flow", p.path())
		return
	}
	p.flow([]int{0, 1}, "resume", "--flow", p.path())
}

// checkRecorded fails the history when an object on disk is recorded by no live
// instance (its own object or a pending undo): nothing a run made may be forgotten.
func (p *project) checkRecorded() {
	p.t.Helper()
	claimed := map[string]bool{}
	loc := filepath.Join(p.dir, ".flow", "p.db")
	if p.state != "" {
		loc = p.state
	}
	if p.state != "" || exists(loc) {
		store, err := state.Open(loc, state.Options{ReadOnly: true})
		if errors.Is(err, fs.ErrNotExist) {
			return // nothing has run yet
		}
		if err != nil {
			p.fail("open the state: %v", err)
		}
		live, err := ops.LiveInstances(store)
		store.Close()
		if err != nil {
			p.fail("read the state: %v", err)
		}
		for _, o := range live {
			objs := slices.Clone(o.Rec.Deposed)
			if !o.Rec.Holds {
				objs = append(objs, o.Rec)
			}
			for _, obj := range objs {
				if v, ok := obj.Inputs["undo"]; ok {
					for _, m := range markerPath.FindAllString(string(v.Value), -1) {
						claimed[m] = true
					}
				}
			}
		}
	}
	var forgotten []string
	filepath.WalkDir(filepath.Join(p.dir, "m"), func(path string, d os.DirEntry, err error) error {
		rel, _ := filepath.Rel(p.dir, path)
		if err == nil && markerPath.MatchString(rel) && !slices.Contains(precious, rel) && rel != "m/d.z.t0" && !claimed[rel] {
			forgotten = append(forgotten, rel)
		}
		return nil
	})
	if len(forgotten) > 0 {
		p.fail("on disk and recorded by no live instance: %v", forgotten)
	}
}

// markerPath matches what faultFlow's tasks make.
var markerPath = regexp.MustCompile(`^?m/d\.[a-z]\.t[0-9](/top)?`)

// withState adds the history's state to a flow command's arguments.
func (p *project) withState(args []string) []string {
	if p.state == "" {
		return args
	}
	return append(slices.Clone(args), "--state", p.state)
}

// takeOver starts a slow run A, stops its process group once it started something,
// ends its database session (as a partition or the server's timeout would), lets
// another writer continue the run to its end, then continues A: A must start no
// instance after it was stopped, and end saying it was taken over.
func (p *project) takeOver(rng *rand.Rand, c *pgtest.Cluster) {
	args := p.withState([]string{"run", "p.hcl", "--new", "--move", "--var", "slow=0.3", "--var", randomItems(rng), "--var", randomTag(rng)})
	a := start(p.t, p.tag, p.dir, args...)
	time.Sleep(time.Duration(200+rng.Intn(500)) * time.Millisecond)
	if err := syscall.Kill(-a.pid(), syscall.SIGSTOP); err != nil {
		a.wait(time.Minute) // it ended already: nothing to take over
		p.log = append(p.log, fmt.Sprintf("%s -> %d before it could be stopped", strings.Join(args, " "), a.code()))
		return
	}
	stopped := uptimeTicks(p.t)
	p.log = append(p.log, strings.Join(args, " ")+" -> SIGSTOP")
	tookOver := false // B held the lock and resumed the run while A was stopped
	if _, ended := endHolderSession(p.t, c, p.tag, p.dir, p.state, a.pid()); ended {
		p.log = append(p.log, "pg_terminate_backend(A)")
		tookOver = p.flow([]int{0, 1, 2}, "resume", "--flow", p.path()).code != 2
	}
	// ESRCH: A had ended as it was stopped (a zombie, or its group emptied): it has
	// nothing left to start, and its wait below ends at once.
	if err := syscall.Kill(-a.pid(), syscall.SIGCONT); err != nil && !errors.Is(err, syscall.ESRCH) {
		p.fail("continue A: %v", err)
	}
	if !a.wait(time.Minute) {
		a.killGroup()
		p.fail("A did not end after it was continued\n%s", a.describe())
	}
	p.log = append(p.log, fmt.Sprintf("A continued -> %d", a.code()))
	for _, line := range strings.Split(readFile(p.t, filepath.Join(p.dir, "starts")), "\n") {
		var pid int
		var began uint64
		var key string
		if n, _ := fmt.Sscan(line, &pid, &began, &key); tookOver && n == 3 && pid == a.pid() && began > stopped {
			p.fail("A, taken over, started exec.top[%q] after it was stopped\n%s", key, a.describe())
		}
	}
}

// restartMidRun restarts the server (an immediate shutdown, as a crash) while a slow run
// commits; the run waits for it and goes on.
func (p *project) restartMidRun(rng *rand.Rand, c *pgtest.Cluster) {
	args := p.withState([]string{"run", "p.hcl", "--new", "--move", "--var", "slow=0.2", "--var", randomItems(rng), "--var", randomTag(rng)})
	a := start(p.t, p.tag, p.dir, args...)
	time.Sleep(time.Duration(100+rng.Intn(400)) * time.Millisecond)
	if err := c.Restart(time.Duration(rng.Intn(1500)) * time.Millisecond); err != nil {
		p.fail("restart the server: %v", err)
	}
	if !a.wait(2 * time.Minute) {
		a.killGroup()
		p.fail("the run did not end after the server restarted\n%s", a.describe())
	}
	p.log = append(p.log, fmt.Sprintf("%s, server restarted -> %d", strings.Join(args, " "), a.code()))
	// 2: the server went down before the run reached it, which a run refuses at once.
	if refused := a.code() == 2 && strings.Contains(a.stderr.String(), "cannot reach the server"); a.code() > 1 && !refused {
		p.fail("the run ended %d after the server restarted\n%s", a.code(), a.describe())
	}
}

// uptimeTicks is the time since boot in clock ticks (USER_HZ, 100 on Linux), the unit of
// a process's start time in /proc/PID/stat.
func uptimeTicks(t *testing.T) uint64 {
	var secs float64
	if _, err := fmt.Sscan(readFile(t, "/proc/uptime"), &secs); err != nil {
		t.Fatal(err)
	}
	return uint64(secs * 100)
}
