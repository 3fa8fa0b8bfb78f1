package ops

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"time"

	"github.com/zclconf/go-cty/cty"

	"github.com/flowdev/flow/engine/plan"
	"github.com/flowdev/flow/engine/state"
	"github.com/flowdev/flow/engine/walk"
)

// NewRunRecord returns the record of a new run of l, running in this process, not
// yet stored: StartRun stores it, or state.Options.FirstRun creates a state file with it.
func NewRunRecord(l *plan.Loaded) (*state.Run, error) {
	abs, err := filepath.Abs(l.Flow.Path)
	if err != nil {
		return nil, fmt.Errorf("record the flow's path: %w", err)
	}
	wd, err := os.Getwd()
	if err != nil {
		return nil, fmt.Errorf("record the working directory: %w", err)
	}
	run := &state.Run{Flow: abs, Dir: wd, FlowHash: l.Flow.Hash, Status: state.Running,
		StartedAt: time.Now().UTC(), PID: os.Getpid(), Plugins: pluginRecords(l.Flow)}
	if err := recordVars(run, l); err != nil {
		return nil, err
	}
	return run, nil
}

// StartRun creates the record of a new run of l, running in this process. With from
// set, the new run starts from from's instance records and logs (copied, so from stays
// as it was): its successes stand unless their inputs changed, as in a resume. It
// returns the records the run starts from, by address (nil without from).
func StartRun(store *state.Store, l *plan.Loaded, from *state.Run) (*state.Run, map[string]*state.Instance, error) {
	run, err := NewRunRecord(l)
	if err != nil {
		return nil, nil, err
	}
	if err := store.CreateRun(run); err != nil {
		return nil, nil, err
	}
	if from == nil {
		return run, nil, nil
	}
	recs, err := store.Instances(from.ID)
	if err != nil {
		return nil, nil, err
	}
	logs := map[string][]byte{}
	for _, r := range recs {
		out, err := store.Logs(from.ID, r.Address)
		if err != nil {
			return nil, nil, err
		}
		logs[r.Address] = out
	}
	run.Outputs = from.Outputs
	if err := store.Commit(run.ID, run, recs, logs); err != nil {
		return nil, nil, fmt.Errorf("copy the records of run %d: %w", from.ID, err)
	}
	return run, byAddress(recs), nil
}

// ResumeRun marks run as running again in this process with l's flow and variables,
// with flow and dir its place (the same place, or where the flow moved). It reports whether the flow's files
// changed since the run started.
func ResumeRun(store *state.Store, run *state.Run, l *plan.Loaded, flow, dir string) (changed bool, err error) {
	changed = run.FlowHash != l.Flow.Hash
	run.Flow, run.Dir = flow, dir
	run.FlowHash, run.Status, run.PID, run.FinishedAt, run.Error = l.Flow.Hash, state.Running, os.Getpid(), nil, ""
	run.Resumes++
	run.Plugins = usedPlugins(run.Plugins, pluginRecords(l.Flow))
	if err := recordVars(run, l); err != nil {
		return changed, err
	}
	return changed, store.PutRun(run)
}

// RunInputs returns what continuing run needs: its instance records by address and
// its recorded variable values (sensitive ones were never recorded).
func RunInputs(store *state.Store, run *state.Run) (map[string]*state.Instance, map[string]cty.Value, error) {
	recs, err := store.Instances(run.ID)
	if err != nil {
		return nil, nil, err
	}
	vars, err := recordedVars(run)
	if err != nil {
		return nil, nil, err
	}
	return byAddress(recs), vars, nil
}

// Given is the part of vars, run's recorded variables, that was given rather than
// defaulted: what a resume starts from, so the flow's defaults as they are now apply.
func Given(run *state.Run, vars map[string]cty.Value) map[string]cty.Value {
	for _, name := range run.Defaulted {
		delete(vars, name)
	}
	return vars
}

// recordedVars decodes the variable values run recorded.
func recordedVars(run *state.Run) (map[string]cty.Value, error) {
	vars := map[string]cty.Value{}
	for name, sv := range run.Vars {
		v, err := sv.Decode()
		if err != nil {
			return nil, fmt.Errorf("read recorded variable %q: %w", name, err)
		}
		vars[name] = v
	}
	return vars, nil
}

func byAddress(recs []*state.Instance) map[string]*state.Instance {
	m := make(map[string]*state.Instance, len(recs))
	for _, r := range recs {
		m[r.Address] = r
	}
	return m
}

// recordVars stores every variable value of l in run except sensitive ones, which are
// only named.
func recordVars(run *state.Run, l *plan.Loaded) error {
	run.Vars, run.Sensitive, run.Defaulted = map[string]state.Value{}, nil, nil
	for name, v := range l.Vars {
		if l.Flow.Variables[name].Sensitive {
			run.Sensitive = append(run.Sensitive, name)
			continue
		}
		if l.Flow.Defaulted(name) {
			run.Defaulted = append(run.Defaulted, name)
		}
		sv, err := state.EncodeValue(v)
		if err != nil {
			return fmt.Errorf("record variable %q: %w", name, err)
		}
		run.Vars[name] = sv
	}
	slices.Sort(run.Defaulted)
	return nil
}

// FinishRun records how an execution of run ended: its status, error and the flow's
// outputs. Sensitive outputs are only named. An output the execution could not
// evaluate (a targeted run that left its task out) keeps its recorded value. full is
// the whole flow's plan: when a targeted execution succeeded but some instance of full
// has not, the run is recorded as pending, unfinished, and "flow resume" continues it.
func FinishRun(store *state.Store, run *state.Run, res *walk.Result, runErr error, full *plan.Plan) error {
	RecordResult(run, res)
	if run.Status == state.Succeeded && len(res.Records) < len(full.Order) {
		done, err := allSucceeded(store, run.ID, full)
		if err != nil {
			return err
		}
		if !done {
			run.Status = state.Pending
		}
	}
	if runErr != nil {
		run.Status, run.Error = state.Failed, runErr.Error()
	}
	return store.PutRun(run)
}

// RecordResult sets run's status, end time and outputs from res, touching no store:
// what walk.Options.Finish returns for an execution of the whole flow, so the run
// record rides with the last checkpoint. Sensitive outputs are only named.
func RecordResult(run *state.Run, res *walk.Result) *state.Run {
	run.Status, run.FinishedAt = res.Status, timePtr(time.Now())
	stored := map[string]state.Value{}
	for name, v := range run.Outputs {
		stored[name] = v
	}
	run.SensitiveOutputs = nil
	for name, v := range res.Outputs {
		if v.ContainsMarked() {
			delete(stored, name)
			run.SensitiveOutputs = append(run.SensitiveOutputs, name)
			continue // sensitive outputs are shown as (sensitive) and never stored
		}
		if sv, err := state.EncodeValue(v); err == nil {
			stored[name] = sv
		}
	}
	sort.Strings(run.SensitiveOutputs)
	run.Outputs = stored
	return run
}

func allSucceeded(store *state.Store, runID uint64, p *plan.Plan) (bool, error) {
	recs, err := store.Instances(runID)
	if err != nil {
		return false, err
	}
	have := byAddress(recs)
	for _, addr := range p.Order {
		if r := have[addr]; r == nil || r.Status != state.Succeeded {
			return false, nil
		}
	}
	return true, nil
}

// StartDestroy creates the record of a destroy run that undoes target's instances,
// with target's variables, at flow and dir (target's place, or where its flow moved).
func StartDestroy(store *state.Store, target *state.Run, l *plan.Loaded, flow, dir string) (*state.Run, error) {
	run := &state.Run{Flow: flow, Dir: dir, FlowHash: l.Flow.Hash, Status: state.Running,
		StartedAt: time.Now().UTC(), PID: os.Getpid(), Destroys: target.ID, Plugins: pluginRecords(l.Flow)}
	if err := recordVars(run, l); err != nil {
		return nil, err
	}
	return run, store.CreateRun(run)
}

// DestroyResult sets a destroy run's status and end time from res, touching no store:
// what walk.Options.Finish returns for a destroy, so the run record rides with the
// last checkpoint.
func DestroyResult(run *state.Run, res *walk.Result) *state.Run {
	run.Status, run.FinishedAt = res.Status, timePtr(time.Now())
	return run
}

// FinishDestroy records how a destroy run ended.
func FinishDestroy(store *state.Store, run *state.Run, res *walk.Result, runErr error) error {
	DestroyResult(run, res)
	if runErr != nil {
		run.Status, run.Error = state.Failed, runErr.Error()
	}
	return store.PutRun(run)
}
