package engine

import (
	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/flowdev/flow/engine/config"
)

// evalOutputs evaluates the flow's output blocks over the finished instances. An
// output that reads an instance that did not finish is left out.
func (p *Plan) evalOutputs(values map[string]cty.Value) map[string]cty.Value {
	out := map[string]cty.Value{}
	for _, o := range p.Flow.Outputs {
		if o.Expr == nil {
			continue
		}
		ctx, ok := p.outputContext(o.Refs, values)
		if !ok {
			continue
		}
		v, diags := o.Expr.Value(ctx)
		if diags.HasErrors() || !v.IsWhollyKnown() {
			continue
		}
		if o.Sensitive {
			v = v.Mark(config.Sensitive)
		}
		out[o.Name] = v
	}
	return out
}

func (p *Plan) outputContext(refs []config.Ref, values map[string]cty.Value) (*hcl.EvalContext, bool) {
	ctx := p.Scope.EvalContext(cty.NilVal, cty.NilVal)
	byType := map[string]map[string]cty.Value{}
	for _, r := range refs {
		insts := p.byTask[r.Addr]
		if byType[r.Type] == nil {
			byType[r.Type] = map[string]cty.Value{}
		}
		if len(insts) == 1 && insts[0].Key == cty.NilVal {
			v, ok := values[insts[0].Addr]
			if !ok {
				return nil, false
			}
			byType[r.Type][r.Name] = v
			continue
		}
		keyed := map[string]cty.Value{}
		for _, in := range insts {
			v, ok := values[in.Addr]
			if !ok {
				return nil, false
			}
			keyed[in.Key.AsString()] = v
		}
		byType[r.Type][r.Name] = cty.ObjectVal(keyed)
	}
	for typ, names := range byType {
		ctx.Variables[typ] = cty.ObjectVal(names)
	}
	return ctx, true
}
