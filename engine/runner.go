package engine

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/zclconf/go-cty/cty"

	"github.com/flowdev/flow/engine/state"
)

// Options configure one execution of a plan.
type Options struct {
	// Parallelism bounds how many task instances run at once; 0 means 10.
	Parallelism int
	// FailFast stops starting new instances after the first failure.
	FailFast bool
	RunID    uint64
	Store    Checkpointer
	// Previous holds the records of the run being resumed, by address; nil for a new run.
	// For a destroy (NewDestroyer), the destroy run's records from an
	// earlier attempt: an instance recorded as succeeded there is already undone.
	Previous map[string]*state.Instance
	// Made holds, by address, the records of what earlier runs made and no run undid
	// (the state's live instances): an instance whose object changed is undone from
	// its record before it runs (see objectChanged).
	Made map[string]*state.Instance
	// Replace lists addresses (or task and module prefixes, as for Plan.Select) whose
	// previous success does not stand: they run again.
	Replace []string
	// NoRefresh trusts a success recorded with the same inputs without asking its
	// type to look at its object (--refresh=false; see refresh.go).
	NoRefresh bool
	// Out receives task output, prefixed by address, and one line per state change.
	Out    io.Writer
	Logger hclog.Logger
	// ProgressEvery is how often a line reports instances still running; 0 means 10s.
	ProgressEvery time.Duration
	// Live leaves task output and "still running" lines out of Out: a live view
	// (LastLine, Snapshot) shows them instead. Output is still captured for logs.
	Live bool
	// TransientRetry bounds how long each task retries transient faults on its own
	// (tasks.Env.TransientRetry): 0 means tasks.DefaultTransientRetry, negative none.
	TransientRetry time.Duration
	// Dir is the absolute directory the walk's instances act in (tasks.Env.Dir), which
	// each success records; "" means the process's working directory when NewRunner is
	// called. An undo acts in the directory its record names, when it still exists.
	Dir string
	// Moved undoes every object in Dir, wherever its record says it was made: the
	// project moved there (run --move).
	Moved bool
	// Finish, if set, is called once at the end with the result, unless a checkpoint
	// already failed; the run record it returns is written in the same transaction as
	// the last instance records. Run's error then says whether that commit failed.
	Finish func(*Result) *state.Run
}

// Result is what an execution ends with.
type Result struct {
	Status state.Status // succeeded, failed or interrupted
	// Records are the final records, in plan order.
	Records []*state.Instance
	// Outputs are the flow's outputs that could be evaluated; sensitive ones are marked.
	Outputs map[string]cty.Value
	// FirstFailure is the address of the first instance that failed, or "".
	FirstFailure string
	UpToDate     int
	// Removed counts the instances no longer in the flow that were undone before the
	// walk, by a walk of their own (see orphanPass).
	Removed int
}

// Runner walks a plan once, in the shape it is given: NewRunner's runs the plan,
// NewDestroyer's undoes what a run of it created. Run may be called once; Snapshot, Log
// and LastLine may be called from other goroutines while it runs.
type Runner struct {
	plan    *Plan
	opts    Options
	console *console
	shape   *walkShape

	mu       sync.Mutex // guards records and captures, the live view
	records  map[string]*state.Instance
	captures map[string]*capture
}

// parallelism is how many task instances (or refresh probes) run at once for a
// requested n: n, or 10 when n is 0 or less.
func parallelism(n int) int {
	if n <= 0 {
		return 10
	}
	return n
}

// NewRunner prepares a run of p. It writes nothing until Run.
func NewRunner(p *Plan, opts Options) *Runner {
	return newWalker(p, runShape(p), opts)
}

// newWalker prepares the walk of p that shape describes.
func newWalker(p *Plan, shape *walkShape, opts Options) *Runner {
	opts.Parallelism = parallelism(opts.Parallelism)
	if opts.ProgressEvery <= 0 {
		opts.ProgressEvery = 10 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = hclog.NewNullLogger()
	}
	if opts.Out == nil {
		opts.Out = io.Discard
	}
	opts.Dir = workDir(opts.Dir)
	r := &Runner{plan: p, opts: opts, console: &console{out: opts.Out}, shape: shape,
		records: make(map[string]*state.Instance, len(p.Order)), captures: make(map[string]*capture, len(p.Order))}
	for _, addr := range r.shape.order {
		r.records[addr] = r.shape.op.initial(p.Instances[addr], opts.Previous[addr])
		r.captures[addr] = &capture{}
	}
	return r
}

// Snapshot returns copies of every instance record, in plan order.
func (r *Runner) Snapshot() []state.Instance {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]state.Instance, 0, len(r.shape.order))
	for _, addr := range r.shape.order {
		out = append(out, *r.records[addr])
	}
	return out
}

// Log returns the output captured so far for addr.
func (r *Runner) Log(addr string) ([]byte, bool) {
	r.mu.Lock()
	c, ok := r.captures[addr]
	r.mu.Unlock()
	if !ok {
		return nil, false
	}
	return c.bytes(), true
}

// LastLine returns the last line addr wrote so far, or "".
func (r *Runner) LastLine(addr string) string {
	r.mu.Lock()
	c, ok := r.captures[addr]
	r.mu.Unlock()
	if !ok {
		return ""
	}
	return c.lastLine()
}

// update changes addr's live record under the lock and returns a copy.
func (r *Runner) update(addr string, f func(*state.Instance)) *state.Instance {
	r.mu.Lock()
	defer r.mu.Unlock()
	rec := r.records[addr]
	f(rec)
	cp := *rec
	return &cp
}

func (r *Runner) say(format string, args ...any) {
	r.console.line(r.plan.Scope.Redact(fmt.Sprintf(format, args...)))
}

func timePtr(t time.Time) *time.Time { t = t.UTC(); return &t }

func round(d time.Duration) time.Duration {
	if d < time.Second {
		return d.Round(time.Millisecond)
	}
	return d.Round(10 * time.Millisecond)
}
