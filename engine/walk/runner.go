package walk

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/zclconf/go-cty/cty"

	"github.com/flowdev/flow/engine/plan"
	"github.com/flowdev/flow/engine/state"
)

// Options configure one execution of a plan. The walker reads Parallelism, RunID,
// Store, Previous, Out, ProgressEvery, Live and Finish, and FailFast for what never
// started; the rest it only carries to the operation (Walk.Options), which decides
// what they mean: the engine's, as documented here.
type Options struct {
	// Parallelism bounds how many task instances run at once; 0 means 10.
	Parallelism int
	// FailFast stops starting new instances after the first failure.
	FailFast bool
	RunID    uint64
	Store    Checkpointer
	// Previous holds, by address, the records an earlier attempt of the same walk left
	// (the run being resumed); nil for a new walk. The operation's Initial decides what
	// of each it takes over; an instance with none is recorded as new when Run starts.
	// A destroy's: an instance recorded as succeeded there is already undone.
	Previous map[string]*state.Instance
	// Made holds, by address, the records of what earlier runs made and no run undid
	// (the state's live instances): an instance whose object changed is undone from
	// its record before it runs.
	Made map[string]*state.Instance
	// Replace lists addresses (or task and module prefixes, as for Plan.Select) whose
	// previous success does not stand: they run again.
	Replace []string
	// NoRefresh trusts a success recorded with the same inputs without asking its
	// type to look at its object (--refresh=false).
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
	// each success records; "" means the process's working directory when New is
	// called. An undo acts in the directory its record names, when it still exists.
	Dir string
	// Lineage is the state's lineage id, handed to every task (tasks.Env.Lineage).
	Lineage string
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
	// walk, by a walk of their own; the walker leaves it to its caller.
	Removed int
}

// Runner walks a plan once, in the shape it is given. Run may be called once;
// Snapshot, Log and LastLine may be called from other goroutines while it runs.
type Runner struct {
	plan    *plan.Plan
	opts    Options
	console *console
	shape   *Shape

	mu       sync.Mutex // guards records and captures, the live view
	records  map[string]*state.Instance
	captures map[string]*capture
}

// Parallelism is how many task instances (or refresh probes) run at once for a
// requested n: n, or 10 when n is 0 or less.
func Parallelism(n int) int {
	if n <= 0 {
		return 10
	}
	return n
}

// New prepares the walk of p that shape describes, asking shape's operation for each
// instance's first record. It writes nothing until Run.
func New(p *plan.Plan, shape *Shape, opts Options) *Runner {
	opts.Parallelism = Parallelism(opts.Parallelism)
	if opts.ProgressEvery <= 0 {
		opts.ProgressEvery = 10 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = hclog.NewNullLogger()
	}
	if opts.Out == nil {
		opts.Out = io.Discard
	}
	if opts.Dir == "" {
		opts.Dir, _ = os.Getwd()
	}
	r := &Runner{plan: p, opts: opts, console: &console{out: opts.Out}, shape: shape,
		records: make(map[string]*state.Instance, len(p.Order)), captures: make(map[string]*capture, len(p.Order))}
	for _, addr := range r.shape.Order {
		r.records[addr] = r.shape.Op.Initial(p.Instances[addr], opts.Previous[addr])
		r.captures[addr] = &capture{}
	}
	return r
}

// Snapshot returns copies of every instance record, in plan order.
func (r *Runner) Snapshot() []state.Instance {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]state.Instance, 0, len(r.shape.Order))
	for _, addr := range r.shape.Order {
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

// Round is d as a walk's lines show it: to the millisecond under a second, else to
// 10ms.
func Round(d time.Duration) time.Duration {
	if d < time.Second {
		return d.Round(time.Millisecond)
	}
	return d.Round(10 * time.Millisecond)
}
