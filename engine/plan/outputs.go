package plan

import (
	"github.com/zclconf/go-cty/cty"
)

// EvalOutputs evaluates the flow's output blocks over the finished instances. An
// output that reads an instance that did not finish is left out.
func (p *Plan) EvalOutputs(values map[string]cty.Value) map[string]cty.Value {
	out := map[string]cty.Value{}
	lookup := func(addr string) cty.Value { return values[addr] }
	for _, o := range p.Flow.Outputs {
		if o.Expr == nil {
			continue
		}
		v, ok := p.outputValue(p.root, o, lookup)
		if ok && v.IsWhollyKnown() {
			out[o.Name] = v
		}
	}
	return out
}
