package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/flowdev/flow/engine/state"
	"github.com/flowdev/flow/tasks"
)

// DestroyOptions configure one destroy of a run's instances.
type DestroyOptions struct {
	// RunID is the destroy run each undone instance is checkpointed under.
	RunID uint64
	Store Checkpointer
	// Done holds the destroy run's records from an earlier, interrupted attempt:
	// an instance recorded as succeeded there is already undone.
	Done   map[string]*state.Instance
	Out    io.Writer
	Logger hclog.Logger
	// Live leaves task output out of Out, for a live view (see Options.Live).
	Live bool
	// Parallelism is how many instances are undone at once, each only after everything
	// that depends on it. 0 or 1: one at a time, in reverse plan order.
	Parallelism int
}

// Destruction undoes what one run created. Run may be called once; Snapshot, Log and
// LastLine may be called from other goroutines while it runs.
type Destruction struct {
	plan    *Plan
	created map[string]*state.Instance
	opts    DestroyOptions
	console *console
	values  map[string]cty.Value

	mu sync.Mutex // guards kept, records and captures: undos run concurrently
	// kept names, per instance left in place, why; its dependencies stay too.
	kept     map[string]string
	records  map[string]*state.Instance
	captures map[string]*capture
}

// NewDestruction prepares undoing what the run whose records are created made. It
// writes nothing until Run.
func NewDestruction(p *Plan, created map[string]*state.Instance, opts DestroyOptions) *Destruction {
	if opts.Logger == nil {
		opts.Logger = hclog.NewNullLogger()
	}
	if opts.Out == nil {
		opts.Out = io.Discard
	}
	d := &Destruction{plan: p, created: created, opts: opts, console: &console{out: opts.Out},
		kept: map[string]string{}, records: map[string]*state.Instance{}, captures: map[string]*capture{}}
	for i, addr := range p.Order {
		if !ran(created[addr]) {
			continue
		}
		rec := &state.Instance{Address: addr, Type: p.Instances[addr].Task.Type, Status: state.Pending, Order: i}
		if done := opts.Done[addr]; done != nil && done.Status == state.Succeeded {
			cp := *done
			rec = &cp
		}
		d.records[addr], d.captures[addr] = rec, &capture{}
	}
	return d
}

// ran reports whether an instance record shows that its task ran at some point of the
// run: an instance skipped or pending after a resume may have run in an earlier attempt.
func ran(r *state.Instance) bool {
	return r != nil && (r.Attempts > 0 || r.Status == state.Succeeded)
}

// Run undoes each instance the run started, in reverse dependency order, up to
// Parallelism at a time: decoded from its inputs as that run evaluated them (the plan's
// variables and its dependencies' recorded outputs) and, if its task type is a
// tasks.Destroyer, destroyed. An instance is left alone when its type cannot be undone
// (or, with Type.UndoAttr, the instance does not set that attribute), or when
// something that depends on it could not be destroyed. Each result is committed as it
// comes, so an interrupted destroy continues where it stopped. Like Runner.Run, the
// error is non-nil only when a checkpoint could not be written (then nothing new is
// started); failures are in the Result.
func (d *Destruction) Run(ctx context.Context) (*Result, error) {
	d.values = d.plan.recordedValues(d.created)
	res := &Result{Status: state.Succeeded}
	waits, frees := d.order()
	// Ready instances start latest in plan order first: one at a time, that is reverse plan order.
	var ready []*Instance // by plan order
	push := func(addr string) {
		inst := d.plan.Instances[addr]
		i, _ := slices.BinarySearchFunc(ready, inst.order, func(r *Instance, o int) int { return r.order - o })
		ready = slices.Insert(ready, i, inst)
	}
	for addr, n := range waits {
		if n == 0 {
			push(addr)
		}
	}
	type outcome struct {
		rec *state.Instance
		err error
	}
	results := make(chan outcome)
	running, limit := 0, max(d.opts.Parallelism, 1)
	var commitErr error
	for {
		// The coordinator alone starts undos, and never after a checkpoint failed.
		for commitErr == nil && running < limit && len(ready) > 0 {
			inst := ready[len(ready)-1]
			ready = ready[:len(ready)-1]
			running++
			go func() {
				rec, err := d.one(ctx, inst)
				results <- outcome{rec, err}
			}()
		}
		if running == 0 {
			return res, commitErr
		}
		o := <-results
		running--
		res.Records = append(res.Records, o.rec)
		if o.err != nil && commitErr == nil {
			commitErr = fmt.Errorf("write checkpoint: %w", o.err)
		}
		switch o.rec.Status {
		case state.Failed:
			if res.FirstFailure == "" {
				res.FirstFailure = o.rec.Address
			}
			res.Status = state.Failed
		case state.Interrupted:
			if res.Status != state.Failed {
				res.Status = state.Interrupted
			}
		}
		// An instance may go once everything that depends on it has had its turn.
		for _, dep := range frees[o.rec.Address] {
			if waits[dep]--; waits[dep] == 0 {
				push(dep)
			}
		}
	}
}

// order returns, for each instance to undo, how many instances to undo depend on it
// (waits), and for each, the instances to undo that it depends on (frees). Instances
// that never ran are looked through, so an instance still waits for a dependent
// reached only through them.
func (d *Destruction) order() (waits map[string]int, frees map[string][]string) {
	waits, frees = map[string]int{}, map[string][]string{}
	for addr := range d.records {
		waits[addr] += 0
		seen := map[string]bool{}
		var visit func(string)
		visit = func(a string) {
			for _, dep := range d.plan.Dependents(a) {
				if seen[dep] {
					continue
				}
				seen[dep] = true
				if d.records[dep] == nil {
					visit(dep)
					continue
				}
				waits[addr]++
				frees[dep] = append(frees[dep], addr)
			}
		}
		visit(addr)
	}
	return waits, frees
}

// Snapshot returns copies of the records of the instances being undone, in plan order.
func (d *Destruction) Snapshot() []state.Instance {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []state.Instance
	for _, addr := range d.plan.Order {
		if r := d.records[addr]; r != nil {
			out = append(out, *r)
		}
	}
	return out
}

// Log returns the output captured so far while undoing addr.
func (d *Destruction) Log(addr string) ([]byte, bool) {
	d.mu.Lock()
	c, ok := d.captures[addr]
	d.mu.Unlock()
	if !ok {
		return nil, false
	}
	return c.bytes(), true
}

// LastLine returns the last line written while undoing addr, or "".
func (d *Destruction) LastLine(addr string) string {
	d.mu.Lock()
	c, ok := d.captures[addr]
	d.mu.Unlock()
	if !ok {
		return ""
	}
	return c.lastLine()
}

// recordedValues rebuilds, in plan order, what each instance's dependents read: its
// inputs as evaluated now from the recorded values, and its recorded outputs. An
// instance whose outputs were not stored reads as unknown, so whatever depends on it
// cannot be decoded and is reported so.
func (p *Plan) recordedValues(created map[string]*state.Instance) map[string]cty.Value {
	values := map[string]cty.Value{}
	for _, addr := range p.Order {
		inst := p.Instances[addr]
		rec := created[addr]
		if rec == nil || rec.Status != state.Succeeded || rec.Redacted {
			values[addr] = cty.UnknownVal(objectType(inst.Task))
			continue
		}
		ectx, _ := p.evalContext(inst, func(a string) cty.Value { return values[a] })
		ev, _ := p.evaluate(inst, ectx, false)
		outs := map[string]cty.Value{}
		for name, sv := range rec.Outputs {
			if v, err := sv.Decode(); err == nil {
				outs[name] = v
			}
		}
		values[addr] = instanceValue(inst.Task, ev.inputs, outs)
	}
	return values
}

// one undoes inst and returns its record in the destroy run and the error of
// committing that record.
func (d *Destruction) one(ctx context.Context, inst *Instance) (*state.Instance, error) {
	addr := inst.Addr
	created := d.created[addr]
	d.mu.Lock()
	rec := *d.records[addr]
	d.mu.Unlock()
	if rec.Status == state.Succeeded {
		d.say("%s: already destroyed", addr)
		return &rec, nil
	}
	for _, dep := range d.plan.Dependents(addr) {
		if why := d.keptWhy(dep); why != "" {
			return d.keep(&rec, fmt.Sprintf("kept: %s, which depends on it, was not destroyed", dep), true)
		}
	}
	if inst.Task.RetainOnDestroy {
		d.setKept(addr, "") // as Terraform's removed block with destroy = false: its dependencies may go
		return d.keep(&rec, "retained (retain_on_destroy)", false)
	}
	kind := inst.Task.Kind
	if _, ok := kind.New().(tasks.Destroyer); !ok {
		d.setKept(addr, "") // nothing of it to wait for: its dependencies may go
		return d.keep(&rec, fmt.Sprintf("left as it is (%s; see \"flow tasks %s\")", undoGist(kind.UndoText()), inst.Task.Type), false)
	}
	if _, set := inst.Task.Attributes[kind.UndoAttr]; kind.UndoAttr != "" && !set {
		d.setKept(addr, "")
		return d.keep(&rec, fmt.Sprintf("left as it is (it sets no %s; see \"flow tasks %s\")", kind.UndoAttr, inst.Task.Type), false)
	}
	if err := ctx.Err(); err != nil {
		d.setKept(addr, "interrupted")
		rec.Status, rec.Error = state.Interrupted, "interrupted"
		return &rec, d.commit(&rec, nil)
	}
	return d.undo(ctx, inst, &rec, created)
}

// setKept records that addr stays; a non-empty why keeps its dependencies too.
func (d *Destruction) setKept(addr, why string) {
	d.mu.Lock()
	d.kept[addr] = why
	d.mu.Unlock()
}

// keptWhy says why addr was kept with its dependencies, or "".
func (d *Destruction) keptWhy(addr string) string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.kept[addr]
}

func (d *Destruction) keep(rec *state.Instance, why string, blocks bool) (*state.Instance, error) {
	if blocks {
		d.setKept(rec.Address, why)
	}
	rec.Status, rec.Reason = state.Skipped, why
	d.say("%s: %s", rec.Address, why)
	return rec, d.commit(rec, nil)
}

// undo decodes inst and calls its Destroy; a panic becomes its error.
func (d *Destruction) undo(ctx context.Context, inst *Instance, rec *state.Instance, created *state.Instance) (*state.Instance, error) {
	began := time.Now()
	capt := d.captures[inst.Addr]
	cons := d.console
	if d.opts.Live {
		cons = nil
	}
	prefix := "[" + inst.Addr + "] "
	stdout := &lineWriter{prefix: prefix, console: cons, capture: capt, redact: d.plan.Scope.Redact}
	stderr := &lineWriter{prefix: prefix, console: cons, capture: capt, redact: d.plan.Scope.Redact}
	rec.Status, rec.StartedAt, rec.Attempts = state.Running, timePtr(began), rec.Attempts+1
	d.publish(rec)
	derr := func() (derr error) {
		defer func() {
			if p := recover(); p != nil {
				derr = fmt.Errorf("task panicked: %v", p)
				d.opts.Logger.Error("destroy panicked", "address", inst.Addr, "stack", string(debug.Stack()))
			}
		}()
		ectx, diags := d.plan.evalContext(inst, func(a string) cty.Value { return d.values[a] })
		if diags.HasErrors() {
			return errors.New(diagText(diags))
		}
		ev, whole, err := d.plan.evaluateForDestroy(inst, ectx)
		if err != nil {
			return err
		}
		if fp, hashes := fingerprint(inst.Task, ev.inputs); whole && created.Fingerprint != "" && fp != created.Fingerprint {
			d.say("%s: inputs differ from the run's (%s); destroying what they say now", inst.Addr, changedAttrs(created.AttrHashes, hashes))
		}
		d.say("%s: destroying", inst.Addr)
		env := &tasks.Env{Address: inst.Addr, Attempt: 1, Stdout: stdout, Stderr: stderr,
			Logger: d.opts.Logger.Named(inst.Addr)}
		return ev.task.(tasks.Destroyer).Destroy(ctx, env, d.recordedOutputs(created))
	}()
	stdout.flush()
	stderr.flush()
	rec.FinishedAt = timePtr(time.Now())
	elapsed := round(time.Since(began))
	switch {
	case derr != nil && ctx.Err() != nil:
		rec.Status, rec.Error = state.Interrupted, "interrupted"
		d.setKept(inst.Addr, "interrupted")
		d.say("%s: interrupted after %s", inst.Addr, elapsed)
	case derr != nil:
		rec.Status, rec.Error = state.Failed, d.plan.Scope.Redact(derr.Error())
		d.setKept(inst.Addr, "failed")
		d.say("%s: destroy failed in %s: %s", inst.Addr, elapsed, rec.Error)
	default:
		rec.Status = state.Succeeded
		d.say("%s: destroyed in %s", inst.Addr, elapsed)
	}
	return rec, d.commit(rec, capt.bytes())
}

func (d *Destruction) recordedOutputs(created *state.Instance) tasks.Outputs {
	if created.Status != state.Succeeded || len(created.Outputs) == 0 {
		return nil
	}
	outs := tasks.Outputs{}
	for name, sv := range created.Outputs {
		if v, err := sv.Decode(); err == nil {
			outs[name] = v
		}
	}
	return outs
}

// publish makes rec what Snapshot shows.
func (d *Destruction) publish(rec *state.Instance) {
	cp := *rec
	d.mu.Lock()
	d.records[rec.Address] = &cp
	d.mu.Unlock()
}

func (d *Destruction) commit(rec *state.Instance, log []byte) error {
	d.publish(rec)
	var logs map[string][]byte
	if log != nil {
		logs = map[string][]byte{rec.Address: log}
	}
	cp := *rec
	return d.opts.Store.Commit(d.opts.RunID, nil, []*state.Instance{&cp}, logs)
}

func (d *Destruction) say(format string, args ...any) {
	d.console.line(d.plan.Scope.Redact(fmt.Sprintf(format, args...)))
}

// undoGist is an Undo text up to its first colon or full stop, lower-cased.
func undoGist(text string) string {
	if i := strings.IndexAny(text, ":."); i > 0 {
		text = text[:i]
	}
	if text != "" {
		text = strings.ToLower(text[:1]) + text[1:]
	}
	return text
}

// evaluateForDestroy evaluates inst's inputs and decodes its task for Destroy, and
// reports whether every input was known. A type with DestroyReads needs only those
// attributes known: the rest (a secret, never stored, reads as unknown) are decoded as
// zero values and the task is not validated, since Destroy does not read them. Any
// other type needs every input, and a valid task, as Run does.
func (p *Plan) evaluateForDestroy(inst *Instance, ectx *hcl.EvalContext) (*evaluated, bool, error) {
	reads := inst.Task.Kind.DestroyReads
	ev, diags := p.evaluate(inst, ectx, len(reads) == 0)
	if diags.HasErrors() {
		return nil, false, errors.New(diagText(diags))
	}
	if len(reads) == 0 {
		if ev.task == nil {
			return nil, false, errNotStored
		}
		return ev, true, nil
	}
	whole := true
	plain := make(map[string]cty.Value, len(ev.inputs))
	for name, v := range ev.inputs {
		v, _ = v.UnmarkDeep()
		if !v.IsWhollyKnown() {
			whole = false
			if slices.Contains(reads, name) {
				return nil, false, fmt.Errorf("%s: %w", name, errNotStored)
			}
			v = cty.NullVal(v.Type())
		}
		plain[name] = v
	}
	ev.task = inst.Task.Kind.New()
	if err := tasks.Decode(ev.task, plain); err != nil {
		return nil, false, err
	}
	return ev, whole, nil
}

var errNotStored = errors.New("its inputs read outputs that were not stored (they held a secret, or their task did not finish)")
