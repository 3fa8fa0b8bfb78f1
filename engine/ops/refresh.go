package ops

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/flowdev/flow/engine/plan"
	"github.com/flowdev/flow/engine/state"
	"github.com/flowdev/flow/engine/walk"
	"github.com/flowdev/flow/tasks"
)

// Refresh, as Terraform's: before a resume, a targeted run or a plan lets a recorded
// success stand, the instance's type looks at its object, when it can (its type
// Probes: a built-in tasks.Prober, or a plugin type that probes or checks). What
// drifted runs again, and the run and the plan say why. walk.Options.NoRefresh
// (--refresh=false) trusts the records as they are.

// canProbe reports whether inst's type can look at its object: what its type's
// registration found, so no task is built to ask.
func canProbe(inst *plan.Instance) bool {
	return inst.Task.Kind.Probes()
}

// drift asks task whether what its recorded success made is still there: "" when it
// is (or the type cannot tell), else why the instance runs again.
func drift(ctx context.Context, task tasks.Task, env *tasks.Env, prev *state.Instance) (found string) {
	began := time.Now()
	defer func() { env.Logger.Debug("refreshed", "took", time.Since(began), "drift", found) }()
	var recorded tasks.Outputs
	if prev != nil && len(prev.Outputs) > 0 {
		recorded = decodeOutputs(prev)
	}
	p, ok := task.(tasks.Prober) // asked only of a type that Probes (canProbe)
	if !ok {
		return ""
	}
	what, err := p.Probe(ctx, env, recorded)
	switch {
	case err != nil:
		return fmt.Sprintf("refresh could not look at it (%v)", err)
	case what != "":
		return "drifted since it succeeded: " + what
	}
	return ""
}

// refresh is drift for inst's evaluated task, unless the run (with opts) trusts its
// records.
func refresh(ctx context.Context, opts *walk.Options, inst *plan.Instance, ev *plan.Evaluated, prev *state.Instance) string {
	if opts.NoRefresh || !canProbe(inst) {
		return ""
	}
	return drift(ctx, probeTask(inst, ev, prev), probeEnv(inst.Addr, opts.Logger.Named(inst.Addr), prev, opts.Dir, opts.Lineage), prev)
}

// probeTask is the task whose object a probe looks at: decoded from prev's record
// when it holds one (see object.go), else as evaluated now.
func probeTask(inst *plan.Instance, ev *plan.Evaluated, prev *state.Instance) tasks.Task {
	if prev != nil && prev.Inputs != nil {
		if task, err := recordedTask(inst.Task.Kind, prev, ev.Inputs); err == nil {
			return task
		}
	}
	return ev.Task
}

// probeEnv is the Env a probe runs in: it prints nothing, a daemon that does not
// answer is reported at once rather than retried, and relative paths are taken from
// the directory prev's object was made in, else from dir (see workDir).
func probeEnv(addr string, logger hclog.Logger, prev *state.Instance, dir, lineage string) *tasks.Env {
	env := &tasks.Env{Address: addr, Attempt: 1, Stdout: io.Discard, Stderr: io.Discard, Logger: logger, TransientRetry: -1, Dir: workDir(dir), Lineage: lineage}
	if prev != nil && prev.Dir != "" && isDir(prev.Dir) {
		env.Dir = prev.Dir
	}
	return env
}

// workDir is dir, the directory a run's tasks act in, or the process's working
// directory for "" (a record that kept none). The engine never changes the process's
// directory: tasks get theirs as data (tasks.Env.Dir).
func workDir(dir string) string {
	if dir == "" {
		dir, _ = os.Getwd()
	}
	return dir
}

func isDir(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}

// probeJob is one instance a preview would trust, to be probed.
type probeJob struct {
	inst *plan.Instance
	ev   *plan.Evaluated
	prev *state.Instance
}

// refreshAll probes every instance whose success a preview of spec would let stand,
// in a walk of their own by the one walker (see probe_op.go): at most r.Parallelism
// at once, as a run's tasks, and none started once ctx ends (Ctrl-C), when the error
// is ctx's. It returns a look that answers from what they found. A first pass finds
// them: probing does not change what an instance's dependents read, so the instances
// a drifted one's dependents are (run?) were all found by it.
func refreshAll(ctx context.Context, p *plan.Plan, spec previewSpec, r Refresh) (func(*plan.Instance, *plan.Evaluated, *state.Instance) string, error) {
	jobs := map[string]probeJob{}
	var order []string
	spec.look = func(inst *plan.Instance, ev *plan.Evaluated, prev *state.Instance) string {
		if _, seen := jobs[inst.Addr]; !seen && canProbe(inst) {
			jobs[inst.Addr] = probeJob{inst, ev, prev}
			order = append(order, inst.Addr)
		}
		return ""
	}
	preview(p, spec)
	op := &probeOp{jobs: jobs, dir: spec.Dir, lineage: r.Lineage, logger: r.Logger, found: map[string]string{}}
	if _, err := walk.New(p, probeShape(order, op), probeWalkOptions(r)).Run(ctx); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return func(inst *plan.Instance, _ *plan.Evaluated, _ *state.Instance) string { return op.found[inst.Addr] }, nil
}

// Drifted refreshes every instance spec.Previous (a run that succeeded) recorded and
// returns those whose object changed since, or that refresh could not look at: what a
// resume, which has nothing to do, tells the user a new run would repair.
func Drifted(ctx context.Context, p *plan.Plan, spec Spec, refresh Refresh) ([]Decision, error) {
	ds, err := Preview(ctx, p, spec, &refresh)
	if err != nil {
		return nil, err
	}
	var out []Decision
	for _, d := range ds {
		if d.Action == ActionRun && (strings.HasPrefix(d.Reason, "drifted") || strings.HasPrefix(d.Reason, "refresh could not")) {
			out = append(out, d)
		}
	}
	return out, nil
}
