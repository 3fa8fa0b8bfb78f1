package engine_test

// Test harness for the engine: test-only task types (test_*), a per-test recorder
// they report to, and helpers that load an HCL string, plan it, and run it against a
// real state.Store in t.TempDir().

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zclconf/go-cty/cty"

	"github.com/flowdev/flow/engine"
	"github.com/flowdev/flow/engine/config"
	"github.com/flowdev/flow/engine/state"
	"github.com/flowdev/flow/tasks"
)

// ---------------------------------------------------------------------------
// Recorder

// event is one thing that happened during a run. seq orders events of all kinds
// (task starts and ends, checkpoint commits) totally, without relying on clocks.
type event struct {
	seq  int
	kind string // "start", "end", "commit"
	addr string
}

// recorder is shared by every test task of one harness. All methods are safe for
// concurrent use.
type recorder struct {
	mu      sync.Mutex
	seq     int
	events  []event
	cur     int               // task Runs in progress
	max     int               // highest cur seen
	inputs  map[string]string // last input (key or value) seen by Run, per address
	runs    map[string]int    // Run calls per address (reset between runs)
	tries   map[string]int    // test_fail attempts per address (survives reset)
	commits map[string]int    // address -> seq of the commit that made its success durable
	batches [][]string        // addresses committed as succeeded, per Commit
	changed chan struct{}     // signalled (non-blocking) after every event
	// probes is what test_probe's Probe answers, per address (survives reset); probed
	// counts its Probe calls and seen the recorded value each was given.
	probes map[string]probeAnswer
	probed map[string]int
	seen   map[string]string
	// probing counts Probes in progress and probingMax the most at once.
	probing, probingMax int
}

// probeAnswer is one address's answer to a refresh: drift text, or an error.
type probeAnswer struct {
	drift string
	err   error
	hold  time.Duration // the probe takes this long, or until its context ends
}

func newRecorder() *recorder {
	r := &recorder{tries: map[string]int{}, probes: map[string]probeAnswer{}, changed: make(chan struct{}, 1)}
	r.reset()
	return r
}

// reset forgets everything but test_fail's attempt counters, between runs of a test.
func (r *recorder) reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events, r.cur, r.max = nil, 0, 0
	r.inputs, r.runs, r.commits, r.batches = map[string]string{}, map[string]int{}, map[string]int{}, nil
	r.probed, r.seen = map[string]int{}, map[string]string{}
	r.probing, r.probingMax = 0, 0
}

// answer sets what test_probe's Probe of addr returns from now on.
func (r *recorder) answer(addr string, a probeAnswer) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.probes[addr] = a
}

// probe counts a Probe of addr, given recorded, and returns its answer.
func (r *recorder) probe(addr string, recorded tasks.Outputs) probeAnswer {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.probed[addr]++
	r.probing++
	r.probingMax = max(r.probingMax, r.probing)
	if v, ok := recorded["value"]; ok && v.Type() == cty.String && v.IsKnown() && !v.IsNull() {
		r.seen[addr] = v.AsString()
	}
	return r.probes[addr]
}

func (r *recorder) probeEnded() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.probing--
}

// probesOf is how many times addr was probed since the last reset, and the recorded
// value the last probe was given.
func (r *recorder) probesOf(addr string) (int, string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.probed[addr], r.seen[addr]
}

func (r *recorder) addLocked(kind, addr string) int {
	r.seq++
	r.events = append(r.events, event{seq: r.seq, kind: kind, addr: addr})
	select {
	case r.changed <- struct{}{}:
	default:
	}
	return r.seq
}

func (r *recorder) begin(addr, input string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cur++
	r.max = max(r.max, r.cur)
	r.inputs[addr] = input
	r.runs[addr]++
	r.addLocked("start", addr)
}

func (r *recorder) end(addr string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cur--
	r.addLocked("end", addr)
}

// try counts one test_fail attempt of addr and returns its number, from 1.
func (r *recorder) try(addr string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.tries[addr]++
	return r.tries[addr]
}

// committed records one durable Commit and the addresses it made durable as succeeded.
func (r *recorder) committed(insts []*state.Instance) {
	r.mu.Lock()
	defer r.mu.Unlock()
	seq := r.addLocked("commit", "")
	var batch []string
	for _, in := range insts {
		if in.Status != state.Succeeded {
			continue
		}
		batch = append(batch, in.Address)
		if _, ok := r.commits[in.Address]; !ok {
			r.commits[in.Address] = seq
		}
	}
	sort.Strings(batch)
	r.batches = append(r.batches, batch)
}

// seqOf returns the seq of the first event of kind for addr, or 0.
func (r *recorder) seqOf(kind, addr string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range r.events {
		if e.kind == kind && e.addr == addr {
			return e.seq
		}
	}
	return 0
}

func (r *recorder) maxConcurrency() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.max
}

func (r *recorder) running() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cur
}

func (r *recorder) runsOf(addr string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.runs[addr]
}

// started lists the addresses whose Run was called, sorted.
func (r *recorder) started() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, 0, len(r.runs))
	for a := range r.runs {
		out = append(out, a)
	}
	sort.Strings(out)
	return out
}

func (r *recorder) input(addr string) (string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	v, ok := r.inputs[addr]
	return v, ok
}

func (r *recorder) commitSeq(addr string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.commits[addr]
}

// waitFor blocks until cond holds (checked after every event) or timeout passes.
func (r *recorder) waitFor(timeout time.Duration, cond func() bool) bool {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for !cond() {
		select {
		case <-r.changed:
		case <-deadline.C:
			return cond()
		}
	}
	return true
}

// ---------------------------------------------------------------------------
// Test task types

// sleepTask sleeps ms milliseconds (or until cancelled) and outputs "out-" + key.
type sleepTask struct {
	MS  int    `hcl:"ms"`
	Key string `hcl:"key,optional"`
	rec *recorder
}

func (t *sleepTask) Validate() error {
	if t.MS < 0 {
		return &tasks.AttrError{Attr: "ms", Err: errors.New("must not be negative")}
	}
	return nil
}

func (t *sleepTask) Run(ctx context.Context, env *tasks.Env) (tasks.Outputs, error) {
	t.rec.begin(env.Address, t.Key)
	defer t.rec.end(env.Address)
	timer := time.NewTimer(time.Duration(t.MS) * time.Millisecond)
	defer timer.Stop()
	select {
	case <-timer.C:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return tasks.Outputs{"value": cty.StringVal("out-" + t.Key)}, nil
}

// failTask fails its first fail_times attempts (counted per address across runs of
// one harness), then succeeds.
type failTask struct {
	FailTimes int `hcl:"fail_times"`
	rec       *recorder
}

func (t *failTask) Validate() error { return nil }

func (t *failTask) Run(ctx context.Context, env *tasks.Env) (tasks.Outputs, error) {
	t.rec.begin(env.Address, "")
	defer t.rec.end(env.Address)
	if n := t.rec.try(env.Address); n <= t.FailTimes {
		return nil, fmt.Errorf("planned failure %d of %d", n, t.FailTimes)
	}
	return tasks.Outputs{"value": cty.StringVal("ok")}, nil
}

// panicTask panics.
type panicTask struct{ rec *recorder }

func (t *panicTask) Validate() error { return nil }

func (t *panicTask) Run(ctx context.Context, env *tasks.Env) (tasks.Outputs, error) {
	t.rec.begin(env.Address, "")
	defer t.rec.end(env.Address)
	panic("test_panic: boom")
}

// blockTask blocks until its context is done.
type blockTask struct{ rec *recorder }

func (t *blockTask) Validate() error { return nil }

func (t *blockTask) Run(ctx context.Context, env *tasks.Env) (tasks.Outputs, error) {
	t.rec.begin(env.Address, "")
	defer t.rec.end(env.Address)
	<-ctx.Done()
	return nil, ctx.Err()
}

// echoTask writes value to stdout and outputs it.
type echoTask struct {
	Value string `hcl:"value"`
	rec   *recorder
}

func (t *echoTask) Validate() error { return nil }

func (t *echoTask) Run(ctx context.Context, env *tasks.Env) (tasks.Outputs, error) {
	t.rec.begin(env.Address, t.Value)
	defer t.rec.end(env.Address)
	fmt.Fprintln(env.Stdout, t.Value)
	return tasks.Outputs{"value": cty.StringVal(t.Value)}, nil
}

// probeTask runs as test_echo does, and its type is a tasks.Prober: a refresh asks
// the recorder, which answers as the test set it (no drift by default).
type probeTask struct {
	Value string `hcl:"value"`
	rec   *recorder
}

func (t *probeTask) Validate() error { return nil }

func (t *probeTask) Run(ctx context.Context, env *tasks.Env) (tasks.Outputs, error) {
	t.rec.begin(env.Address, t.Value)
	defer t.rec.end(env.Address)
	return tasks.Outputs{"value": cty.StringVal(t.Value)}, nil
}

func (t *probeTask) Probe(ctx context.Context, env *tasks.Env, recorded tasks.Outputs) (string, error) {
	a := t.rec.probe(env.Address, recorded)
	defer t.rec.probeEnded()
	select {
	case <-time.After(a.hold):
	case <-ctx.Done():
		return "", ctx.Err()
	}
	return a.drift, a.err
}

var _ tasks.Prober = (*probeTask)(nil)

var valueOutput = []tasks.Output{{Name: "value", Type: cty.String}}

// testRegistry holds only the test task types, all reporting to rec.
func testRegistry(rec *recorder) *tasks.Registry {
	reg := tasks.NewRegistry()
	reg.MustRegister(tasks.Type{Name: "test_sleep", Outputs: valueOutput,
		New: func() tasks.Task { return &sleepTask{rec: rec} }})
	reg.MustRegister(tasks.Type{Name: "test_fail", Outputs: valueOutput,
		New: func() tasks.Task { return &failTask{rec: rec} }})
	reg.MustRegister(tasks.Type{Name: "test_panic",
		New: func() tasks.Task { return &panicTask{rec: rec} }})
	reg.MustRegister(tasks.Type{Name: "test_block",
		New: func() tasks.Task { return &blockTask{rec: rec} }})
	reg.MustRegister(tasks.Type{Name: "test_echo", Outputs: valueOutput,
		New: func() tasks.Task { return &echoTask{rec: rec} }})
	reg.MustRegister(tasks.Type{Name: "test_probe", Outputs: valueOutput, Refresh: "its object is still there",
		New: func() tasks.Task { return &probeTask{rec: rec} }})
	reg.MustRegister(tasks.Type{Name: "test_secret", Outputs: secretOutputs,
		New: func() tasks.Task { return &secretTask{rec: rec} }})
	return reg
}

// ---------------------------------------------------------------------------
// Checkpointer spy

// spyStore is a Checkpointer that commits to the real store and then tells the
// recorder which addresses each durable commit recorded as succeeded.
type spyStore struct {
	inner engine.Checkpointer
	rec   *recorder
}

func (s *spyStore) Commit(runID uint64, run *state.Run, insts []*state.Instance, logs map[string][]byte) error {
	err := s.inner.Commit(runID, run, insts, logs)
	if err == nil {
		s.rec.committed(insts)
	}
	return err
}

// ---------------------------------------------------------------------------
// Harness

// syncBuffer is a bytes.Buffer safe for concurrent writes and reads.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

type harness struct {
	t     *testing.T
	dir   string
	rec   *recorder
	reg   *tasks.Registry
	store *state.Store
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	dir := t.TempDir()
	st, err := state.Open(filepath.Join(dir, "state.db"), state.Options{})
	if err != nil {
		t.Fatalf("open state: %v", err)
	}
	t.Cleanup(func() { st.Close() })
	rec := newRecorder()
	return &harness{t: t, dir: dir, rec: rec, reg: testRegistry(rec), store: st}
}

// plan writes src to flow.hcl (replacing an earlier one), loads it, assigns vars
// (NAME=VALUE), and plans it. Any error diagnostic fails the test.
func (h *harness) plan(src string, vars ...string) *engine.Plan {
	h.t.Helper()
	path := filepath.Join(h.dir, "flow.hcl")
	if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
		h.t.Fatal(err)
	}
	l, _, diags := engine.Load(path, h.reg, config.VarInputs{Vars: vars})
	if diags.HasErrors() {
		h.t.Fatalf("load: %s", diags.Error())
	}
	p := l.Plan
	return p
}

func (h *harness) createRun() uint64 {
	h.t.Helper()
	run := &state.Run{Flow: filepath.Join(h.dir, "flow.hcl"), Status: state.Running, StartedAt: time.Now().UTC()}
	if err := h.store.CreateRun(run); err != nil {
		h.t.Fatalf("create run: %v", err)
	}
	return run.ID
}

// outcome is what one execution produced.
type outcome struct {
	res   *engine.Result
	out   string
	runID uint64
}

// byAddr indexes the result's records.
func (o outcome) byAddr() map[string]*state.Instance { return index(o.res.Records) }

func index(recs []*state.Instance) map[string]*state.Instance {
	m := make(map[string]*state.Instance, len(recs))
	for _, r := range recs {
		m[r.Address] = r
	}
	return m
}

// run executes p with opts. Zero fields get defaults: a new run in h.store,
// Parallelism 4, Out captured. A checkpoint error fails the test.
func (h *harness) run(ctx context.Context, p *engine.Plan, opts engine.Options) outcome {
	h.t.Helper()
	if opts.RunID == 0 {
		opts.RunID = h.createRun()
	}
	if opts.Store == nil {
		opts.Store = h.store
	}
	if opts.Parallelism == 0 {
		opts.Parallelism = 4
	}
	out, ok := opts.Out.(*syncBuffer) // a caller may pass one to watch the run
	if !ok {
		out = &syncBuffer{}
	}
	opts.Out = out
	res, err := engine.NewRunner(p, opts).Run(ctx)
	if err != nil {
		h.t.Fatalf("run: %v\noutput:\n%s", err, out.String())
	}
	if res == nil {
		h.t.Fatalf("run returned a nil result\noutput:\n%s", out.String())
	}
	return outcome{res: res, out: out.String(), runID: opts.RunID}
}

// stored re-reads the records of runID from the store.
func (h *harness) stored(runID uint64) map[string]*state.Instance {
	h.t.Helper()
	recs, err := h.store.Instances(runID)
	if err != nil {
		h.t.Fatalf("instances: %v", err)
	}
	return index(recs)
}

// previous is what a resume of runID passes as Options.Previous.
func (h *harness) previous(runID uint64) map[string]*state.Instance { return h.stored(runID) }

// waitOutput polls out until it contains want or timeout passes.
func waitOutput(out *syncBuffer, want string, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for !strings.Contains(out.String(), want) {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
	return true
}

// runFlow is the one-call form: new harness, plan src, run it.
func runFlow(t *testing.T, src string, opts engine.Options) (*harness, outcome) {
	t.Helper()
	h := newHarness(t)
	return h, h.run(context.Background(), h.plan(src), opts)
}

// assertStored checks that the store holds, for every instance of the result, a
// record with the same status, attempts and error.
func (h *harness) assertStored(o outcome) {
	h.t.Helper()
	st := h.stored(o.runID)
	if len(st) != len(o.res.Records) {
		h.t.Errorf("store has %d records, result has %d", len(st), len(o.res.Records))
	}
	for _, r := range o.res.Records {
		s, ok := st[r.Address]
		if !ok {
			h.t.Errorf("%s: not in the store", r.Address)
			continue
		}
		if s.Status != r.Status || s.Attempts != r.Attempts || s.Error != r.Error {
			h.t.Errorf("%s: stored (%s, %d attempts, %q), result (%s, %d attempts, %q)",
				r.Address, s.Status, s.Attempts, s.Error, r.Status, r.Attempts, r.Error)
		}
	}
}

// statuses renders addr=status for every record, for failure messages.
func statuses(recs []*state.Instance) string {
	var b bytes.Buffer
	for _, r := range recs {
		fmt.Fprintf(&b, "  %s = %s (attempts %d, error %q, reason %q)\n", r.Address, r.Status, r.Attempts, r.Error, r.Reason)
	}
	return b.String()
}

// secretTask publishes its value marked sensitive at run time, as a task whose
// command printed a token does, and a clean output derived from nothing secret.
type secretTask struct {
	rec   *recorder
	Value string `hcl:"value"`
}

func (t *secretTask) Validate() error { return nil }

func (t *secretTask) Run(ctx context.Context, env *tasks.Env) (tasks.Outputs, error) {
	t.rec.begin(env.Address, t.Value)
	defer t.rec.end(env.Address)
	return tasks.Outputs{
		"value": cty.StringVal(t.Value).Mark(tasks.SensitiveMark),
		"path":  cty.StringVal("/etc/flow/secret.conf"),
	}, nil
}

var secretOutputs = []tasks.Output{{Name: "value", Type: cty.String}, {Name: "path", Type: cty.String, Clean: true}}
