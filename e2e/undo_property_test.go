package e2e

import (
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// historyFlow makes m/KEY.TAG for each item; its undo removes that file. A changed tag
// is another object (exec's undo reads it), so a run undoes the old one first.
const historyFlow = `variable "items" {
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

task "exec" "mk" {
  for_each = var.items
  script   = "mkdir -p m && sleep ${var.slow} && touch m/${each.key}.${var.tag}"
  undo     = "rm -f m/${each.key}.${var.tag}"
}
`

// TestUndoProperty (issue 27): over random histories of runs, shrinks and growths,
// --var changes, --replace, destroys, SIGKILLs (each followed by the resume or the
// destroy that continues it) and moves of the whole project, after a final flow
// destroy no marker any run created is left, and the file no run created is still there.
func TestUndoProperty(t *testing.T) {
	seed := time.Now().UnixNano()
	if s := os.Getenv("FLOW_PROPERTY_SEED"); s != "" {
		fmt.Sscan(s, &seed)
	}
	t.Logf("seed %d (FLOW_PROPERTY_SEED reruns it)", seed)
	rng := rand.New(rand.NewSource(seed))
	for h := 0; h < 4; h++ {
		t.Run(fmt.Sprintf("history%d", h), func(t *testing.T) { undoHistory(t, rng, 10) })
	}
}

// project is the directory the history's flow lives in, which moves.
type project struct {
	t     *testing.T
	tag   string
	root  string
	dir   string
	moves int
	log   []string
	seed  int64  // the history's seed, printed with a failure; 0: not named
	state string // the state's location when not the flow's default file (PostgreSQL)
}

func (p *project) flow(want []int, args ...string) result {
	p.t.Helper()
	args = p.withState(args)
	r := runFlow(p.t, p.tag, p.dir, time.Minute, args...)
	p.log = append(p.log, fmt.Sprintf("%s -> %d", strings.Join(args, " "), r.code))
	if !slices.Contains(want, r.code) {
		p.t.Fatalf("seed %d, history:\n  %s\nexit %d, want %v\n%s", p.seed, strings.Join(p.log, "\n  "), r.code, want, r.desc)
	}
	return r
}

func undoHistory(t *testing.T, rng *rand.Rand, steps int) {
	root := t.TempDir()
	p := &project{t: t, tag: newTag(t), root: root, dir: filepath.Join(root, "p0")}
	writeFiles(t, p.dir, map[string]string{"p.hcl": historyFlow, "m/precious": "no run made me"})
	for i := 0; i < steps; i++ {
		switch op := rng.Intn(6); op {
		case 0, 1:
			p.flow([]int{0}, "run", "p.hcl", "--move", "--var", randomItems(rng), "--var", randomTag(rng))
		case 2:
			p.flow([]int{0}, "run", "p.hcl", "--move", "--replace", "exec.mk", "--var", randomTag(rng))
		case 3:
			p.flow([]int{0}, "destroy", "--auto-approve", "--flow", p.path())
		case 4:
			p.kill(rng)
		case 5:
			p.move()
		}
		if !exists(filepath.Join(p.dir, "m", "precious")) {
			t.Fatalf("history:\n  %s\nremoved m/precious, which no run made", strings.Join(p.log, "\n  "))
		}
	}
	p.flow([]int{0}, "destroy", "--auto-approve", "--flow", p.path())
	entries, _ := os.ReadDir(filepath.Join(p.dir, "m"))
	var left []string
	for _, e := range entries {
		if e.Name() != "precious" {
			left = append(left, e.Name())
		}
	}
	if len(left) > 0 || !exists(filepath.Join(p.dir, "m", "precious")) {
		t.Fatalf("history:\n  %s\nafter the final destroy m/ holds %v besides precious (precious there: %v)",
			strings.Join(p.log, "\n  "), left, exists(filepath.Join(p.dir, "m", "precious")))
	}
}

func (p *project) path() string { return filepath.Join(p.dir, "p.hcl") }

// kill starts a slow run (or destroy), SIGKILLs flow at a random moment, and continues
// what it killed as the documented path does: a resume, or destroy again.
func (p *project) kill(rng *rand.Rand) {
	destroy := rng.Intn(3) == 0
	args := []string{"run", "p.hcl", "--move", "--var", "slow=0.4", "--var", randomItems(rng), "--var", randomTag(rng)}
	if destroy {
		args = []string{"destroy", "--auto-approve", "--flow", p.path()}
	}
	pr := start(p.t, p.tag, p.dir, args...)
	time.Sleep(time.Duration(50+rng.Intn(700)) * time.Millisecond)
	_ = syscall.Kill(pr.pid(), syscall.SIGKILL)
	pr.wait(10 * time.Second)
	killTagged(p.tag) // what the killed flow left (its task's sleep)
	p.log = append(p.log, strings.Join(args, " ")+" -> SIGKILL")
	if destroy {
		p.flow([]int{0}, "destroy", "--auto-approve", "--flow", p.path())
		return
	}
	p.flow([]int{0}, "resume", "--flow", p.path())
}

// move renames the whole project: its files, its state and what its runs made.
func (p *project) move() {
	p.moves++
	to := filepath.Join(p.root, fmt.Sprintf("p%d", p.moves))
	if err := os.Rename(p.dir, to); err != nil {
		p.t.Fatal(err)
	}
	p.log = append(p.log, "mv "+filepath.Base(p.dir)+" "+filepath.Base(to))
	p.dir = to
}

func randomItems(rng *rand.Rand) string {
	var items []string
	for _, it := range []string{"a", "b", "c"} {
		if rng.Intn(2) == 0 {
			items = append(items, `"`+it+`"`)
		}
	}
	return "items=[" + strings.Join(items, ",") + "]"
}

func randomTag(rng *rand.Rand) string { return fmt.Sprintf("tag=t%d", rng.Intn(3)) }
