package ops

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/flowdev/flow/engine/config"
	"github.com/flowdev/flow/engine/plan"
	"github.com/flowdev/flow/engine/state"
	"github.com/flowdev/flow/engine/walk"
	"github.com/flowdev/flow/tasks"
)

// Orphan is an instance the state holds, because a run created it and no run undid
// it, that the flow no longer has: a shrunk for_each, a deleted task or module call.
// The next run (or a destroy) undoes it first, decoded from the inputs it succeeded
// with, since the flow can no longer evaluate it.
type Orphan struct {
	Run uint64 // the run that created it
	Rec *state.Instance
}

// LiveInstances folds every run of store into the instances that are live: each one
// a run started or that holds deposed objects (HoldsObjects), by its latest such record, less those a destroy undid (all, once a
// destroy succeeded) and those a run undid, or left as they are, as orphans.
func LiveInstances(store *state.Store) (map[string]Orphan, error) {
	runs, err := store.Runs()
	if err != nil {
		return nil, err
	}
	live := map[string]Orphan{}
	for _, run := range runs {
		recs, err := store.Instances(run.ID)
		if err != nil {
			return nil, err
		}
		for _, r := range recs {
			switch {
			case run.Destroys != 0 && r.Status == state.Succeeded, r.Removed && (r.Status == state.Succeeded || r.Status == state.Skipped):
				delete(live, r.Address)
			case run.Destroys == 0 && !r.Removed && HoldsObjects(r):
				live[r.Address] = Orphan{Run: run.ID, Rec: r}
			case run.Destroys == 0 && !r.Removed && r.Holds:
				delete(live, r.Address) // it took over what earlier runs made, and undid it all
			}
		}
		if run.Destroys != 0 && run.Status == state.Succeeded {
			clear(live)
		}
	}
	return live, nil
}

// MadeRecords is, by address, the record of each live instance (LiveInstances): what
// earlier runs made and no run undid.
func MadeRecords(live map[string]Orphan) map[string]*state.Instance {
	made := make(map[string]*state.Instance, len(live))
	for addr, o := range live {
		made[addr] = o.Rec
	}
	return made
}

// MadeElsewhere counts the live instances (LiveInstances) made in a directory other
// than here, and names those directories, sorted. A record an older flow wrote, which
// kept no directory, counts as made in its run's directory.
func MadeElsewhere(store *state.Store, live map[string]Orphan, here string) (count int, dirs []string) {
	runDirs := map[uint64]string{}
	for _, o := range live {
		dir := o.Rec.Dir
		if dir == "" {
			if _, ok := runDirs[o.Run]; !ok {
				if run, err := store.GetRun(o.Run); err == nil {
					runDirs[o.Run] = run.Dir
				}
			}
			dir = runDirs[o.Run]
		}
		if dir == "" || dir == here {
			continue
		}
		count++
		if !slices.Contains(dirs, dir) {
			dirs = append(dirs, dir)
		}
	}
	slices.Sort(dirs)
	return count, dirs
}

// orphansOf is the live instances p does not have (all with p nil), latest in their
// plan first.
func orphansOf(live map[string]Orphan, p *plan.Plan) []Orphan {
	var out []Orphan
	for addr, o := range live {
		if p == nil || p.Instances[addr] == nil {
			out = append(out, o)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Run != out[j].Run {
			return out[i].Run > out[j].Run
		}
		return out[i].Rec.Order > out[j].Rec.Order
	})
	return out
}

// orphanDecision says what undoing o does: destroy it, or keep it and why.
func orphanDecision(reg *tasks.Registry, o Orphan) Decision {
	kind, _ := reg.Lookup(o.Rec.Type)
	if why := orphanKeep(kind, &o); why != "" {
		return Decision{Addr: o.Rec.Address, Action: ActionKeep, Reason: why}
	}
	return Decision{Addr: o.Rec.Address, Action: ActionDestroy, Reason: fmt.Sprintf("no longer in the flow (run %d created it); undone first", o.Run)}
}

// OrphanDecisions says what a walk that visits what walked accepts does first with
// the other live instances (the orphans); keep (--keep-removed) keeps them all.
func OrphanDecisions(reg *tasks.Registry, live map[string]Orphan, walked func(string) bool, keep bool) []Decision {
	var out []Decision
	for _, o := range orphansOf(live, nil) {
		if walked(o.Rec.Address) {
			continue
		}
		d := orphanDecision(reg, o)
		if keep && d.Action == ActionDestroy {
			d.Action, d.Reason = ActionKeep, fmt.Sprintf("no longer in the flow (run %d created it); kept (--keep-removed): a later run or flow destroy undoes it", o.Run)
		}
		out = append(out, d)
	}
	return out
}

func setsInput(rec *state.Instance, name string) bool {
	sv, ok := rec.Inputs[name]
	if !ok {
		return false
	}
	v, err := sv.Decode()
	return err == nil && !v.IsNull()
}

// OrphanPass undoes what live (LiveInstances) holds and keepAddr does not keep, before a
// walk, with a walk of its own (see orphanPlan) recorded in run, with opts (the run's;
// what goes is said on opts.Out first). It returns how many it
// undid and, when that walk did not succeed (failed or interrupted), its result,
// which is run's.
func OrphanPass(ctx context.Context, store *state.Store, run *state.Run, live map[string]Orphan, keepAddr func(string) bool, reg *tasks.Registry, scope *config.Scope, opts walk.Options) (removed int, failed *walk.Result, err error) {
	var orphans []Orphan
	for _, o := range orphansOf(live, nil) {
		if !keepAddr(o.Rec.Address) {
			orphans = append(orphans, o)
		}
	}
	if len(orphans) == 0 {
		return 0, nil, nil
	}
	// As Terraform prints the plan before apply: what goes, before it goes.
	if undone := toUndo(reg, orphans); len(undone) > 0 {
		fmt.Fprintf(opts.Out, "No longer in the flow, so undone first: %s.\n", orphanList(undone))
	}
	// The live view shows the run's walk (the orphans' is printed), and every orphan
	// gets its turn whatever --fail-fast says of the run.
	opts.Live, opts.FailFast = false, false
	w := newOrphanDestroyer(orphans, reg, scope, opts)
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
func toUndo(reg *tasks.Registry, orphans []Orphan) []Orphan {
	var out []Orphan
	for _, o := range orphans {
		if orphanDecision(reg, o).Action == ActionDestroy {
			out = append(out, o)
		}
	}
	return out
}

// orphanList names orphans, the first ten and how many more.
func orphanList(orphans []Orphan) string {
	var names []string
	for i, o := range orphans {
		if i == 10 {
			names = append(names, fmt.Sprintf("and %d more", len(orphans)-i))
			break
		}
		names = append(names, o.Rec.Address)
	}
	return strings.Join(names, ", ")
}

// SayKept names on out, for a run with --keep-removed, each instance the state holds
// and p does not have, which the run leaves as it is and the state keeps.
func SayKept(store *state.Store, p *plan.Plan, out io.Writer) {
	live, err := LiveInstances(store)
	if err != nil {
		return
	}
	for _, o := range orphansOf(live, p) {
		fmt.Fprintf(out, "%s: no longer in the flow; kept (--keep-removed)\n", o.Rec.Address)
	}
}
