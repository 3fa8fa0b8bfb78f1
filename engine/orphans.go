package engine

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/zclconf/go-cty/cty"

	"github.com/flowdev/flow/engine/state"
	"github.com/flowdev/flow/tasks"
)

// An orphan is an instance the state holds, because a run created it and no run undid
// it, that the flow no longer has: a shrunk for_each, a deleted task or module call.
// The next run (or a destroy) undoes it first, decoded from the inputs it succeeded
// with, since the flow can no longer evaluate it.
type orphan struct {
	run uint64 // the run that created it
	rec *state.Instance
}

// liveInstances folds every run of store into the instances that are live: each one
// a run started, by its latest such record, less those a destroy undid (all, once a
// destroy succeeded) and those a run undid, or left as they are, as orphans.
func liveInstances(store *state.Store) (map[string]orphan, error) {
	runs, err := store.Runs()
	if err != nil {
		return nil, err
	}
	live := map[string]orphan{}
	for _, run := range runs {
		recs, err := store.Instances(run.ID)
		if err != nil {
			return nil, err
		}
		for _, r := range recs {
			switch {
			case run.Destroys != 0 && r.Status == state.Succeeded, r.Removed && (r.Status == state.Succeeded || r.Status == state.Skipped):
				delete(live, r.Address)
			case run.Destroys == 0 && !r.Removed && ran(r):
				live[r.Address] = orphan{run: run.ID, rec: r}
			}
		}
		if run.Destroys != 0 && run.Status == state.Succeeded {
			clear(live)
		}
	}
	return live, nil
}

// orphansOf is the live instances p does not have (all with p nil), latest in their
// plan first.
func orphansOf(live map[string]orphan, p *Plan) []orphan {
	var out []orphan
	for addr, o := range live {
		if p == nil || p.Instances[addr] == nil {
			out = append(out, o)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].run != out[j].run {
			return out[i].run > out[j].run
		}
		return out[i].rec.Order > out[j].rec.Order
	})
	return out
}

// orphanDecision says what undoing o does: destroy it, or keep it and why.
func (s *Session) orphanDecision(o orphan) Decision {
	d := Decision{Addr: o.rec.Address, Action: ActionKeep}
	kind, ok := s.reg.Lookup(o.rec.Type)
	switch {
	case !ok:
		d.Reason = fmt.Sprintf("no longer in the flow; left as it is (there is no task type %q)", o.rec.Type)
	case o.rec.Retain:
		d.Reason = "no longer in the flow; retained (retain_on_destroy)"
	case !kind.Destroys():
		d.Reason = fmt.Sprintf("no longer in the flow; left as it is (%s)", kind.UndoGist())
	case kind.UndoAttr != "" && !setsInput(o.rec, kind.UndoAttr):
		d.Reason = fmt.Sprintf("no longer in the flow; left as it is (it sets no %s)", kind.UndoAttr)
	case o.rec.Inputs == nil:
		d.Reason = "no longer in the flow; left as it is (its inputs were not recorded: it did not succeed, or an older flow ran it)"
	default:
		d.Action = ActionDestroy
		d.Reason = fmt.Sprintf("no longer in the flow (run %d created it); undone first", o.run)
	}
	return d
}

func setsInput(rec *state.Instance, name string) bool {
	sv, ok := rec.Inputs[name]
	if !ok {
		return false
	}
	v, err := sv.Decode()
	return err == nil && !v.IsNull()
}

// undoOrphans undoes orphans in order, one at a time, printing to req.Out, and records
// each as a Removed instance of run runID. It returns the address of the first that
// could not be undone, with its error, and stops there.
func (s *Session) undoOrphans(ctx context.Context, store *state.Store, runID uint64, orphans []orphan, req *Request) (string, error) {
	cons := &console{out: req.Out}
	for _, o := range orphans {
		d := s.orphanDecision(o)
		addr := o.rec.Address
		if d.Action != ActionDestroy { // said once: the state holds it no longer
			cons.line(fmt.Sprintf("%s: %s", addr, d.Reason))
			kept := &state.Instance{Address: addr, Type: o.rec.Type, Status: state.Skipped, Removed: true, Order: -1, Reason: d.Reason}
			if err := store.Commit(runID, nil, []*state.Instance{kept}, nil); err != nil {
				return addr, fmt.Errorf("record %s: %w", addr, err)
			}
			continue
		}
		cons.line(fmt.Sprintf("%s: no longer in the flow; destroying", addr))
		began := time.Now()
		capt := &capture{}
		w := &lineWriter{prefix: "[" + addr + "] ", console: cons, capture: capt, redact: func(s string) string { return s }}
		err := s.undoRecorded(ctx, o.rec, &tasks.Env{Address: addr, Attempt: 1, Stdout: w, Stderr: w,
			Logger: req.namedLogger(addr), TransientRetry: req.TransientRetry})
		w.flush()
		rec := &state.Instance{Address: addr, Type: o.rec.Type, Status: state.Succeeded, Attempts: 1, Removed: true,
			StartedAt: timePtr(began), FinishedAt: timePtr(time.Now()), Order: -1,
			Reason: fmt.Sprintf("no longer in the flow; undone (run %d created it)", o.run)}
		took := round(time.Since(began))
		if err != nil && ctx.Err() != nil {
			rec.Status, rec.Error = state.Interrupted, err.Error()
			cons.line(fmt.Sprintf("%s: interrupted after %s", addr, took))
		} else if err != nil {
			rec.Status, rec.Error = state.Failed, err.Error()
			cons.line(fmt.Sprintf("%s: destroy failed in %s: %s", addr, took, err))
		} else {
			cons.line(fmt.Sprintf("%s: destroyed in %s", addr, took))
		}
		if cerr := store.Commit(runID, nil, []*state.Instance{rec}, map[string][]byte{addr: capt.bytes()}); cerr != nil {
			return addr, fmt.Errorf("record the undo of %s: %w", addr, cerr)
		}
		if err != nil {
			return addr, err
		}
	}
	return "", nil
}

// undoRecorded decodes rec's task from its recorded inputs and calls its Destroy.
func (s *Session) undoRecorded(ctx context.Context, rec *state.Instance, env *tasks.Env) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("task panicked: %v", p)
		}
	}()
	kind, _ := s.reg.Lookup(rec.Type)
	values := make(map[string]cty.Value, len(rec.Inputs))
	for name, sv := range rec.Inputs {
		v, err := sv.Decode()
		if err != nil {
			return fmt.Errorf("read recorded input %q: %w", name, err)
		}
		values[name] = v
	}
	for _, name := range rec.Withheld {
		if slices.Contains(kind.DestroyReads, name) || len(kind.DestroyReads) == 0 {
			return fmt.Errorf("%s: %w", name, errNotStored)
		}
	}
	task := kind.New()
	if err := tasks.Decode(task, values); err != nil {
		return fmt.Errorf("decode the recorded inputs: %w", err)
	}
	return task.(tasks.Destroyer).Destroy(ctx, env, decodeOutputs(rec))
}

// namedLogger is req's logger for addr, or one that discards.
func (req *Request) namedLogger(addr string) hclog.Logger {
	if l := req.logger(nil); l != nil {
		return l.Named(addr)
	}
	return hclog.NewNullLogger()
}

// orphanPass undoes what the state holds and plan does not, before a walk; nil when
// all of it was undone or kept, else the walk's failed result.
func (s *Session) orphanPass(ctx context.Context, store *state.Store, run *state.Run, keepAddr func(string) bool, req *Request) (*Result, error) {
	live, err := liveInstances(store)
	if err != nil {
		return nil, err
	}
	var orphans []orphan
	for _, o := range orphansOf(live, nil) {
		if !keepAddr(o.rec.Address) {
			orphans = append(orphans, o)
		}
	}
	addr, err := s.undoOrphans(ctx, store, run.ID, orphans, req)
	if err == nil {
		return nil, nil
	}
	status := state.Failed
	if ctx.Err() != nil { // Ctrl-C: the run is interrupted, and a resume undoes the rest
		status = state.Interrupted
	}
	rec := &state.Instance{Address: addr, Status: status, Error: err.Error(), Removed: true}
	run.Status, run.FinishedAt, run.Error = status, timePtr(time.Now()), fmt.Sprintf("undo %s: %v", addr, err)
	if perr := store.PutRun(run); perr != nil {
		return nil, perr
	}
	res := &Result{Status: status, Records: []*state.Instance{rec}}
	if status == state.Failed {
		res.FirstFailure = addr
	}
	return res, nil
}

// sayKept names, for a run with KeepRemoved, each instance the state holds and p does
// not have, which the run leaves as it is and the state keeps.
func (s *Session) sayKept(store *state.Store, p *Plan, req *Request) {
	live, err := liveInstances(store)
	if err != nil {
		return
	}
	cons := &console{out: req.Out}
	for _, o := range orphansOf(live, p) {
		cons.line(fmt.Sprintf("%s: no longer in the flow; kept (--keep-removed)", o.rec.Address))
	}
}
