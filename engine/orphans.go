package engine

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/flowdev/flow/engine/config"
	"github.com/flowdev/flow/engine/state"
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

// madeRecords is, by address, the record of each live instance (liveInstances): what
// earlier runs made and no run undid.
func madeRecords(live map[string]orphan) map[string]*state.Instance {
	made := make(map[string]*state.Instance, len(live))
	for addr, o := range live {
		made[addr] = o.rec
	}
	return made
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
	kind, _ := s.reg.Lookup(o.rec.Type)
	if why := orphanKeep(kind, &o); why != "" {
		return Decision{Addr: o.rec.Address, Action: ActionKeep, Reason: why}
	}
	return Decision{Addr: o.rec.Address, Action: ActionDestroy, Reason: fmt.Sprintf("no longer in the flow (run %d created it); undone first", o.run)}
}

func setsInput(rec *state.Instance, name string) bool {
	sv, ok := rec.Inputs[name]
	if !ok {
		return false
	}
	v, err := sv.Decode()
	return err == nil && !v.IsNull()
}

// orphanPass undoes what live (liveInstances) holds and keepAddr does not keep, before a walk,
// with a walk of its own (see orphanPlan) recorded in run. It returns how many it
// undid and, when that walk did not succeed (failed or interrupted), its result,
// which is run's.
func (s *Session) orphanPass(ctx context.Context, store *state.Store, run *state.Run, live map[string]orphan, keepAddr func(string) bool, scope *config.Scope, req *Request) (removed int, failed *Result, err error) {
	var orphans []orphan
	for _, o := range orphansOf(live, nil) {
		if !keepAddr(o.rec.Address) {
			orphans = append(orphans, o)
		}
	}
	if len(orphans) == 0 {
		return 0, nil, nil
	}
	// As Terraform prints the plan before apply: what goes, before it goes.
	if undone := s.toUndo(orphans); len(undone) > 0 {
		fmt.Fprintf(req.Out, "No longer in the flow, so undone first: %s.\n", orphanList(undone))
	}
	opts := req.options(run, store, scope.Redact)
	// The live view shows the run's walk (the orphans' is printed), and every orphan
	// gets its turn whatever --fail-fast says of the run.
	opts.Live, opts.FailFast = false, false
	w := newOrphanDestroyer(orphans, s.reg, scope, opts)
	res, err := w.Run(ctx)
	if err != nil {
		return 0, nil, err
	}
	for _, r := range res.Records {
		if r.Status == state.Succeeded {
			removed++
		}
	}
	if res.Status == state.Succeeded {
		return removed, nil, nil
	}
	res.Removed = removed
	run.Status, run.FinishedAt = res.Status, timePtr(time.Now())
	if res.FirstFailure != "" {
		run.Error = "undo " + res.FirstFailure + " (no longer in the flow) failed"
	}
	if err := store.PutRun(run); err != nil {
		return 0, nil, err
	}
	return removed, res, nil
}

// toUndo is the orphans that undoing undoes rather than keeps.
func (s *Session) toUndo(orphans []orphan) []orphan {
	var out []orphan
	for _, o := range orphans {
		if s.orphanDecision(o).Action == ActionDestroy {
			out = append(out, o)
		}
	}
	return out
}

// orphanList names orphans, the first ten and how many more.
func orphanList(orphans []orphan) string {
	var names []string
	for i, o := range orphans {
		if i == 10 {
			names = append(names, fmt.Sprintf("and %d more", len(orphans)-i))
			break
		}
		names = append(names, o.rec.Address)
	}
	return strings.Join(names, ", ")
}

// sayKept names, for a run with KeepRemoved, each instance the state holds and p does
// not have, which the run leaves as it is and the state keeps.
func (s *Session) sayKept(store *state.Store, p *Plan, req *Request) {
	live, err := liveInstances(store)
	if err != nil {
		return
	}
	for _, o := range orphansOf(live, p) {
		fmt.Fprintf(req.Out, "%s: no longer in the flow; kept (--keep-removed)\n", o.rec.Address)
	}
}
