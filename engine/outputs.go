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

// outputContext gives an output every instance of each task it reads.
func (p *Plan) outputContext(refs []config.Ref, values map[string]cty.Value) (*hcl.EvalContext, bool) {
	ctx := p.Scope.EvalContext(cty.NilVal, cty.NilVal)
	all := func(i int) []string { return addrs(p.byTask[refs[i].Addr]) }
	ok := p.addTaskValues(ctx, refs, all, func(addr string) cty.Value { return values[addr] })
	return ctx, ok
}
