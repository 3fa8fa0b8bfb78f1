package plan

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
	ctyjson "github.com/zclconf/go-cty/cty/json"

	"github.com/flowdev/flow/engine/config"
	"github.com/flowdev/flow/tasks"
)

// Evaluated is an instance's body Evaluated against its dependencies' values.
type Evaluated struct {
	Task      tasks.Task
	Inputs    map[string]cty.Value // converted to each attribute's type; marks kept
	Sensitive bool                 // some input derives from a sensitive variable
	Timeout   time.Duration
	Retry     config.RetryPolicy
}

// lookupFunc returns the value an expression sees for a finished instance, or
// cty.NilVal when it has none.
type lookupFunc func(addr string) cty.Value

// EvalContext builds inst's context: var, local, path, each, and the value of every
// instance and module output its references read.
func (p *Plan) EvalContext(inst *Instance, lookup lookupFunc) (*hcl.EvalContext, hcl.Diagnostics) {
	ctx, diags := p.context(inst.mod, inst.Key, inst.Value, lookup)
	p.addRefValues(ctx, inst.mod, inst.Task.Refs, inst.reads, lookup)
	return ctx, diags
}

// addRefValues adds to ctx, for each reference refs[i] made in m, the values of what
// reads[i] lists: task instances shaped as TYPE.NAME or TYPE.NAME[KEY], module
// instances as module.NAME or module.NAME[KEY], objects of their outputs. It reports
// false when lookup has no value for an instance read.
func (p *Plan) addRefValues(ctx *hcl.EvalContext, m *moduleInstance, refs []config.Ref, reads []resolved, lookup lookupFunc) bool {
	byType := map[string]map[string]cty.Value{}
	keyed := map[string]map[string]cty.Value{}              // task addr -> key -> value
	outputs := map[string]map[string]map[string]cty.Value{} // call -> key -> output -> value
	for i, r := range refs {
		if byType[r.Type] == nil {
			byType[r.Type] = map[string]cty.Value{}
		}
		if m.unexpanded[r.Addr] || r.Invalid || r.Name == "" {
			byType[r.Type][r.Name] = cty.DynamicVal
			continue
		}
		if call, ok := m.flow.Module(r.Name); r.IsModule() && (!ok || call.Flow == nil) {
			byType[r.Type][r.Name] = cty.DynamicVal // not declared or not loaded: Load reported it
			continue
		}
		if r.IsModule() {
			if outputs[r.Name] == nil {
				outputs[r.Name] = map[string]map[string]cty.Value{}
			}
			for _, c := range reads[i].mods {
				vals, ok := p.moduleValue(c, r.Attr, lookup)
				if !ok {
					return false
				}
				k := keyString(c.key)
				if outputs[r.Name][k] == nil {
					outputs[r.Name][k] = map[string]cty.Value{}
				}
				for name, v := range vals {
					outputs[r.Name][k][name] = v
				}
			}
			continue
		}
		target, ok := m.flow.Task(r.Addr)
		if !ok { // not declared: Load reported it
			byType[r.Type][r.Name] = cty.DynamicVal
			continue
		}
		if keyed[r.Addr] == nil {
			keyed[r.Addr] = map[string]cty.Value{}
		}
		for _, a := range reads[i].insts {
			v := lookup(a)
			if v == cty.NilVal {
				return false
			}
			if target.ForEach == nil {
				byType[r.Type][r.Name] = v
			} else {
				keyed[r.Addr][p.Instances[a].Key.AsString()] = v
			}
		}
		if target.ForEach != nil {
			byType[r.Type][r.Name] = cty.ObjectVal(keyed[r.Addr])
		}
	}
	for name, byKey := range outputs {
		call, _ := m.flow.Module(name)
		if call.ForEach == nil {
			byType[config.ModuleRoot][name] = cty.ObjectVal(byKey[""])
			continue
		}
		insts := make(map[string]cty.Value, len(byKey))
		for k, vals := range byKey {
			insts[k] = cty.ObjectVal(vals)
		}
		byType[config.ModuleRoot][name] = cty.ObjectVal(insts)
	}
	for typ, names := range byType {
		ctx.Variables[typ] = cty.ObjectVal(names)
	}
	return true
}

func keyString(key cty.Value) string {
	if key == cty.NilVal {
		return ""
	}
	return key.AsString()
}

// ObjectType is the type of an instance's value: its attributes and outputs, an
// output winning over an input of the same name.
func ObjectType(t *config.Task) cty.Type {
	attrs := map[string]cty.Type{}
	for _, a := range t.Attrs {
		attrs[a.Name] = a.Type
	}
	for _, o := range t.Kind.Outputs {
		attrs[o.Name] = o.Type
	}
	return cty.Object(attrs)
}

// InstanceValue is what dependents read from a finished instance.
func InstanceValue(t *config.Task, inputs, outputs map[string]cty.Value) cty.Value {
	vals := make(map[string]cty.Value, len(inputs)+len(outputs))
	for k, v := range inputs {
		vals[k] = v
	}
	for _, o := range t.Kind.Outputs {
		v, ok := outputs[o.Name]
		if !ok {
			v = cty.NullVal(o.Type)
		}
		vals[o.Name] = v
	}
	return cty.ObjectVal(vals)
}

// Evaluate computes inst's inputs in ctx. With decode set, and every input known, it
// also decodes them into a new task value and runs its Validate.
func (p *Plan) Evaluate(inst *Instance, ctx *hcl.EvalContext, decode bool) (*Evaluated, hcl.Diagnostics) {
	t := inst.Task
	ev := &Evaluated{Inputs: make(map[string]cty.Value, len(t.Attrs))}
	var diags hcl.Diagnostics
	known := true
	for _, a := range t.Attrs {
		attr, ok := t.Attributes[a.Name]
		if !ok {
			ev.Inputs[a.Name] = cty.NullVal(a.Type)
			continue
		}
		val, d := attr.Expr.Value(ctx)
		diags = append(diags, d...)
		if d.HasErrors() {
			known = false
			continue
		}
		conv, err := convert.Convert(val, a.Type)
		if err != nil {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Incorrect attribute value type",
				Detail:  fmt.Sprintf("Inappropriate value for attribute %q: %s.", a.Name, err),
				Subject: attr.Expr.Range().Ptr(), Expression: attr.Expr, EvalContext: ctx})
			known = false
			continue
		}
		// A single-use secret (a sensitive key) feeds no output: it alone does not
		// make the outputs secret.
		ev.Sensitive = ev.Sensitive || withoutKeys(a, conv).ContainsMarked()
		if len(a.SensitiveKeys) > 0 {
			conv = markSensitiveKeys(a, conv)
			if p.Scope != nil && conv.IsWhollyKnown() {
				p.Scope.AddSecrets(conv)
			}
		}
		known = known && conv.IsWhollyKnown()
		ev.Inputs[a.Name] = conv
	}
	diags = append(diags, p.evalSettings(t, ctx, ev)...)
	if !decode || !known || diags.HasErrors() {
		return ev, diags
	}
	ev.Task = t.Kind.New()
	plain := make(map[string]cty.Value, len(ev.Inputs))
	// Where the marks were is worked out only for a task that asks (a hot path).
	aware, wantsPaths := ev.Task.(tasks.SensitiveInputs)
	var marked map[string][]cty.Path
	for k, v := range ev.Inputs {
		if !wantsPaths {
			plain[k], _ = v.UnmarkDeep()
			continue
		}
		var pvm []cty.PathValueMarks
		plain[k], pvm = v.UnmarkDeepWithPaths()
		for _, m := range pvm {
			if marked == nil {
				marked = map[string][]cty.Path{}
			}
			marked[k] = append(marked[k], m.Path)
		}
	}
	err := tasks.Decode(ev.Task, plain)
	if wantsPaths && err == nil {
		aware.SetSensitive(marked)
	}
	if err == nil {
		err = ev.Task.Validate()
	}
	if err != nil {
		diags = append(diags, p.taskError(inst, err))
	}
	return ev, diags
}

// taskError puts a decode or Validate error on the narrowest range it names.
func (p *Plan) taskError(inst *Instance, err error) *hcl.Diagnostic {
	t := inst.Task
	rng := t.DeclRange
	var ae *tasks.AttrError
	if errors.As(err, &ae) {
		if a, ok := t.Attributes[ae.Attr]; ok {
			rng = a.Expr.Range()
		}
	}
	return &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid " + t.Type + " task",
		Detail: fmt.Sprintf("%s: %s.", inst.mod.addr(t.Addr), err), Subject: rng.Ptr()}
}

// evalSettings evaluates timeout and retry for one instance.
func (p *Plan) evalSettings(t *config.Task, ctx *hcl.EvalContext, ev *Evaluated) hcl.Diagnostics {
	var diags hcl.Diagnostics
	ev.Retry = config.RetryPolicy{Attempts: 1, Delay: time.Second, MaxDelay: 30 * time.Second}
	if t.Timeout != nil {
		diags = append(diags, evalDuration(t.Timeout, ctx, "timeout", &ev.Timeout)...)
	}
	if t.Retry == nil {
		return diags
	}
	ev.Retry.Attempts = 3
	if e := t.Retry.Attempts; e != nil {
		v, d := e.Value(ctx)
		diags = append(diags, d...)
		if !d.HasErrors() && v.IsKnown() {
			n, err := convert.Convert(v, cty.Number)
			if err != nil || n.IsNull() || !n.AsBigFloat().IsInt() || n.AsBigFloat().Sign() <= 0 {
				diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid retry attempts",
					Detail: "attempts must be a whole number of at least 1 (the first try counts).", Subject: e.Range().Ptr()})
			} else {
				i, _ := n.AsBigFloat().Int64()
				ev.Retry.Attempts = int(i)
			}
		}
	}
	if e := t.Retry.Delay; e != nil {
		diags = append(diags, evalDuration(e, ctx, "delay", &ev.Retry.Delay)...)
	}
	if e := t.Retry.MaxDelay; e != nil {
		diags = append(diags, evalDuration(e, ctx, "max_delay", &ev.Retry.MaxDelay)...)
	}
	return diags
}

func evalDuration(e hcl.Expression, ctx *hcl.EvalContext, what string, out *time.Duration) hcl.Diagnostics {
	v, diags := e.Value(ctx)
	if diags.HasErrors() || !v.IsKnown() {
		return diags
	}
	s, err := convert.Convert(v, cty.String)
	var d time.Duration
	if err == nil && !s.IsNull() {
		d, err = tasks.Duration(s.AsString()).Positive(what, 0)
	}
	if err != nil || s.IsNull() {
		return append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid " + what,
			Detail: what + ` must be a positive duration such as "90s" or "5m".`, Subject: e.Range().Ptr()})
	}
	*out = d
	return diags
}

// Fingerprint hashes the task type and its fully evaluated inputs, and each input
// alone, so a resume can say which inputs changed.
func Fingerprint(t *config.Task, inputs map[string]cty.Value) (string, map[string]string) {
	all := sha256.New()
	all.Write([]byte(t.Type))
	per := make(map[string]string, len(t.Attrs))
	inputs = WithoutSensitiveKeys(t.Attrs, inputs)
	for _, a := range t.Attrs {
		if t.Kind != nil && a.Name == t.Kind.UndoAttr {
			continue // how to undo a task is not what it does: changing it re-runs nothing
		}
		v, _ := inputs[a.Name].UnmarkDeep()
		js, err := ctyjson.Marshal(v, a.Type)
		if err != nil {
			js = []byte(err.Error())
		}
		h := sha256.Sum256(js)
		per[a.Name] = hex.EncodeToString(h[:8])
		fmt.Fprintf(all, "\x00%s\x00", a.Name)
		all.Write(js)
	}
	return hex.EncodeToString(all.Sum(nil)), per
}

// sameInputs names the instances of one task in one module instance.
type sameInputs struct {
	task *config.Task
	mod  *moduleInstance
}

// typeCheck evaluates every instance with unknown task values, so type errors and
// Validate errors on known values surface before the run. Repeats across instances
// of one task are reported once, and instances that do not read each are evaluated
// once per task and module instance: they evaluate alike (20,000 instances of one
// task were 40% of planning).
func (p *Plan) typeCheck() hcl.Diagnostics {
	unknown := map[*config.Task]cty.Value{}
	lookup := func(addr string) cty.Value {
		t := p.Instances[addr].Task
		if t.Kind == nil {
			return cty.DynamicVal
		}
		if v, ok := unknown[t]; ok {
			return v
		}
		unknown[t] = cty.UnknownVal(ObjectType(t))
		return unknown[t]
	}
	var diags hcl.Diagnostics
	seen := map[string]bool{}
	checked := map[sameInputs]bool{}
	for _, addr := range p.Order {
		inst := p.Instances[addr]
		if inst.Task.Kind == nil {
			continue // an unknown task type: Load reported it
		}
		if !inst.Task.ReadsEach {
			same := sameInputs{inst.Task, inst.mod}
			if checked[same] {
				continue
			}
			checked[same] = true
		}
		ctx, d := p.EvalContext(inst, lookup)
		_, d2 := p.Evaluate(inst, ctx, true)
		for _, diag := range append(d, d2...) {
			k := fmt.Sprintf("%v|%s|%s", diag.Subject, diag.Summary, diag.Detail)
			if !seen[k] {
				seen[k] = true
				diags = append(diags, inst.mod.annotate(hcl.Diagnostics{diag})...)
			}
		}
	}
	return diags
}
