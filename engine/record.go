package engine

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/flowdev/flow/engine/config"
	"github.com/flowdev/flow/engine/state"
	"github.com/flowdev/flow/tasks"
)

// Loaded is a flow read, its variables assigned, and planned.
type Loaded struct {
	Flow *config.Flow
	Vars map[string]cty.Value
	Plan *Plan
}

// Load reads the flow at path, assigns its variables from vars and plans it: the one
// pipeline every command that needs a plan goes through. It returns every diagnostic,
// warnings included; Loaded is nil when one is an error, and Flow (for printing
// sources) is returned whenever the files parsed.
func Load(path string, reg *tasks.Registry, vars config.VarInputs) (*Loaded, *config.Flow, hcl.Diagnostics) {
	flow, diags := config.Load(path, reg)
	if diags.HasErrors() {
		return nil, flow, diags
	}
	values, d := flow.Assign(vars)
	if diags = append(diags, d...); diags.HasErrors() {
		return nil, flow, diags
	}
	scope, d := flow.NewScope(values)
	if diags = append(diags, d...); diags.HasErrors() {
		return nil, flow, diags
	}
	plan, d := NewPlan(flow, scope)
	if diags = append(diags, d...); diags.HasErrors() {
		return nil, flow, diags
	}
	return &Loaded{Flow: flow, Vars: values, Plan: plan}, flow, diags
}

// NewRunRecord returns the record of a new run of l, running in this process, not
// yet stored: StartRun stores it, or state.Options.FirstRun creates a state file with it.
func NewRunRecord(l *Loaded) (*state.Run, error) {
	abs, err := filepath.Abs(l.Flow.Path)
	if err != nil {
		return nil, err
	}
	run := &state.Run{Flow: abs, FlowHash: l.Flow.Hash, Status: state.Running,
		StartedAt: time.Now().UTC(), PID: os.Getpid()}
	if err := RecordVars(run, l); err != nil {
		return nil, err
	}
	return run, nil
}

// StartRun creates the record of a new run of l, running in this process. With from
// set, the new run starts from from's instance records and logs (copied, so from stays
// as it was): its successes stand unless their inputs changed, as in a resume. It
// returns the records the run starts from, by address (nil without from).
func StartRun(store *state.Store, l *Loaded, from *state.Run) (*state.Run, map[string]*state.Instance, error) {
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

// ResumeRun marks run as running again in this process with l's flow and variables.
// It reports whether the flow's files changed since the run started.
func ResumeRun(store *state.Store, run *state.Run, l *Loaded) (changed bool, err error) {
	changed = run.FlowHash != l.Flow.Hash
	run.FlowHash, run.Status, run.PID, run.FinishedAt, run.Error = l.Flow.Hash, state.Running, os.Getpid(), nil, ""
	run.Resumes++
	if err := RecordVars(run, l); err != nil {
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
	vars, err := RecordedVars(run)
	if err != nil {
		return nil, nil, err
	}
	return byAddress(recs), vars, nil
}

// RecordedVars decodes the variable values run recorded.
func RecordedVars(run *state.Run) (map[string]cty.Value, error) {
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

// RecordVars stores every variable value of l in run except sensitive ones, which are
// only named.
func RecordVars(run *state.Run, l *Loaded) error {
	run.Vars, run.Sensitive = map[string]state.Value{}, nil
	for name, v := range l.Vars {
		if l.Flow.Variables[name].Sensitive {
			run.Sensitive = append(run.Sensitive, name)
			continue
		}
		sv, err := state.EncodeValue(v)
		if err != nil {
			return fmt.Errorf("record variable %q: %w", name, err)
		}
		run.Vars[name] = sv
	}
	return nil
}

// FinishRun records how an execution of run ended: its status, error and the flow's
// outputs. Sensitive outputs are only named. An output the execution could not
// evaluate (a targeted run that left its task out) keeps its recorded value. full is
// the whole flow's plan: when a targeted execution succeeded but some instance of full
// has not, the run is recorded as pending, unfinished, and "flow resume" continues it.
func FinishRun(store *state.Store, run *state.Run, res *Result, runErr error, full *Plan) error {
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
// what Options.Finish returns for an execution of the whole flow, so the run record
// rides with the last checkpoint. Sensitive outputs are only named.
func RecordResult(run *state.Run, res *Result) *state.Run {
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

func allSucceeded(store *state.Store, runID uint64, p *Plan) (bool, error) {
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
// with target's variables.
func StartDestroy(store *state.Store, target *state.Run, l *Loaded) (*state.Run, error) {
	run := &state.Run{Flow: target.Flow, FlowHash: l.Flow.Hash, Status: state.Running,
		StartedAt: time.Now().UTC(), PID: os.Getpid(), Destroys: target.ID}
	if err := RecordVars(run, l); err != nil {
		return nil, err
	}
	return run, store.CreateRun(run)
}

// FinishDestroy records how a destroy run ended.
func FinishDestroy(store *state.Store, run *state.Run, res *Result, runErr error) error {
	run.Status, run.FinishedAt = res.Status, timePtr(time.Now())
	if runErr != nil {
		run.Status, run.Error = state.Failed, runErr.Error()
	}
	return store.PutRun(run)
}
