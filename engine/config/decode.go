package config

import (
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/ext/typeexpr"
	"github.com/hashicorp/hcl/v2/gohcl"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"

	"github.com/flowdev/flow/tasks"
)

var variableSchema = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{
	{Name: "type"}, {Name: "default"}, {Name: "description"}, {Name: "sensitive"},
}}

func (f *Flow) decodeVariable(b *hcl.Block) hcl.Diagnostics {
	name := b.Labels[0]
	v := &Variable{Name: name, Type: cty.DynamicPseudoType, DeclRange: b.DefRange}
	content, diags := b.Body.Content(variableSchema)
	if !hclsyntax.ValidIdentifier(name) {
		diags = append(diags, errorf(b.LabelRanges[0], "Invalid variable name", "%q is not a valid identifier.", name))
	}
	if prev, dup := f.Variables[name]; dup {
		diags = append(diags, errorf(b.LabelRanges[0], "Duplicate variable",
			"Variable %q was already declared at %s.", name, prev.DeclRange))
		return diags
	}
	if a, ok := content.Attributes["type"]; ok {
		ty, d := typeexpr.TypeConstraint(a.Expr)
		diags = append(diags, d...)
		v.Type = ty
	}
	if a, ok := content.Attributes["description"]; ok {
		diags = append(diags, gohcl.DecodeExpression(a.Expr, nil, &v.Description)...)
	}
	if a, ok := content.Attributes["sensitive"]; ok {
		diags = append(diags, gohcl.DecodeExpression(a.Expr, nil, &v.Sensitive)...)
	}
	if a, ok := content.Attributes["default"]; ok {
		val, d := a.Expr.Value(nil)
		diags = append(diags, d...)
		if d.HasErrors() {
			v.Default, v.HasDefault = cty.UnknownVal(v.Type), true // reported
		} else {
			conv, err := convert.Convert(val, v.Type)
			if err != nil {
				diags = append(diags, errorf(a.Expr.Range(), "Invalid default value",
					"The default for variable %q does not match its type: %s.", name, err))
				conv = cty.UnknownVal(v.Type) // reported: what reads it sees an unknown value
			}
			v.Default, v.HasDefault = conv, true
		}
	}
	f.Variables[name] = v
	return diags
}

func (f *Flow) decodeLocals(b *hcl.Block) hcl.Diagnostics {
	attrs, diags := b.Body.JustAttributes()
	for name, a := range attrs {
		if prev, dup := f.Locals[name]; dup {
			diags = append(diags, errorf(a.NameRange, "Duplicate local value",
				"Local value %q was already defined at %s.", name, prev.DeclRange))
			continue
		}
		f.Locals[name] = &Local{Name: name, Expr: a.Expr, DeclRange: a.Range}
	}
	return diags
}

// taskMetaSchema and retrySchema are the shared settings of every task block, as
// tasks.SharedSettings lists them.
var taskMetaSchema, retrySchema = sharedSchemas()

func sharedSchemas() (meta, retry *hcl.BodySchema) {
	meta, retry = &hcl.BodySchema{}, &hcl.BodySchema{}
	for _, s := range tasks.SharedSchema() {
		if s.Block == nil {
			meta.Attributes = append(meta.Attributes, hcl.AttributeSchema{Name: s.Name})
			continue
		}
		meta.Blocks = append(meta.Blocks, hcl.BlockHeaderSchema{Type: s.Name})
		if s.Name == "retry" {
			for _, a := range s.Block {
				retry.Attributes = append(retry.Attributes, hcl.AttributeSchema{Name: a})
			}
		}
	}
	return meta, retry
}

const unknownTypeSummary = "Unknown task type"

func (f *Flow) decodeTask(b *hcl.Block, reg *tasks.Registry) hcl.Diagnostics {
	typ, name := b.Labels[0], b.Labels[1]
	t := &Task{Type: typ, Name: name, Addr: typ + "." + name, DeclRange: b.DefRange}
	var diags hcl.Diagnostics
	kind, known := reg.Lookup(typ)
	if !known {
		diags = append(diags, errorf(b.LabelRanges[0], unknownTypeSummary,
			"There is no task type %q.%s Known types: %s.", typ, suggest(typ, reg.Names()), quoteAll(reg.Names())))
	}
	if !hclsyntax.ValidIdentifier(name) {
		diags = append(diags, errorf(b.LabelRanges[1], "Invalid task name", "%q is not a valid identifier.", name))
	}
	if prev, dup := f.taskIndex[t.Addr]; dup {
		return append(diags, errorf(b.LabelRanges[1], "Duplicate task",
			"Task %s is declared twice: first at %s, again here.", t.Addr, prev.DeclRange))
	}
	f.taskIndex[t.Addr] = t
	f.Tasks = append(f.Tasks, t)

	meta, remain, d := b.Body.PartialContent(taskMetaSchema)
	diags = append(diags, d...)
	diags = append(diags, t.decodeMeta(meta)...)
	if !known {
		return diags
	}
	t.Kind = kind
	attrs, err := tasks.Attributes(kind.New())
	if err != nil { // Registry.Check, in the registry builder's tests, covers this: a programming error
		panic(err)
	}
	t.Attrs = attrs
	schema := &hcl.BodySchema{}
	for _, a := range attrs {
		schema.Attributes = append(schema.Attributes, hcl.AttributeSchema{Name: a.Name, Required: a.Required})
	}
	content, d := remain.Content(schema)
	diags = append(diags, d...)
	t.Body, t.Attributes = remain, content.Attributes
	return diags
}

func (t *Task) decodeMeta(meta *hcl.BodyContent) hcl.Diagnostics {
	var diags hcl.Diagnostics
	if a, ok := meta.Attributes["description"]; ok {
		diags = append(diags, gohcl.DecodeExpression(a.Expr, nil, &t.Description)...)
	}
	if a, ok := meta.Attributes["retain_on_destroy"]; ok {
		// A constant, as description is: destroy decides from the flow alone.
		diags = append(diags, gohcl.DecodeExpression(a.Expr, nil, &t.RetainOnDestroy)...)
	}
	if a, ok := meta.Attributes["max_parallel"]; ok {
		diags = append(diags, t.decodeMaxParallel(a)...)
	}
	if a, ok := meta.Attributes["for_each"]; ok {
		t.ForEach = a.Expr
	}
	if a, ok := meta.Attributes["timeout"]; ok {
		t.Timeout = a.Expr
	}
	if a, ok := meta.Attributes["depends_on"]; ok {
		exprs, d := hcl.ExprList(a.Expr)
		diags = append(diags, d...)
		t.dependsOn = exprs
	}
	for i, rb := range meta.Blocks {
		if i > 0 {
			diags = append(diags, errorf(rb.DefRange, "Duplicate retry block",
				"A task has at most one retry block; the first is at %s.", meta.Blocks[0].DefRange))
			continue
		}
		c, d := rb.Body.Content(retrySchema)
		diags = append(diags, d...)
		t.Retry = &Retry{Range: rb.DefRange}
		if a, ok := c.Attributes["attempts"]; ok {
			t.Retry.Attempts = a.Expr
		}
		if a, ok := c.Attributes["delay"]; ok {
			t.Retry.Delay = a.Expr
		}
		if a, ok := c.Attributes["max_delay"]; ok {
			t.Retry.MaxDelay = a.Expr
		}
	}
	return diags
}

// decodeMaxParallel reads max_parallel: a constant, as retain_on_destroy is, since the
// scheduler applies it before any instance runs.
func (t *Task) decodeMaxParallel(a *hcl.Attribute) hcl.Diagnostics {
	diags := gohcl.DecodeExpression(a.Expr, nil, &t.MaxParallel)
	if !diags.HasErrors() && t.MaxParallel < 1 {
		diags = append(diags, errorf(a.Expr.Range(), "Invalid max_parallel",
			"max_parallel is how many of the task's instances may run at once: at least 1, not %d.", t.MaxParallel))
	}
	return diags
}

var outputSchema = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{
	{Name: "value", Required: true}, {Name: "description"}, {Name: "sensitive"},
}}

func (f *Flow) decodeOutput(b *hcl.Block) hcl.Diagnostics {
	o := &Output{Name: b.Labels[0], DeclRange: b.DefRange}
	content, diags := b.Body.Content(outputSchema)
	for _, prev := range f.Outputs {
		if prev.Name == o.Name {
			return append(diags, errorf(b.LabelRanges[0], "Duplicate output",
				"Output %q was already declared at %s.", o.Name, prev.DeclRange))
		}
	}
	if a, ok := content.Attributes["value"]; ok {
		o.Expr = a.Expr
	}
	if a, ok := content.Attributes["description"]; ok {
		diags = append(diags, gohcl.DecodeExpression(a.Expr, nil, &o.Description)...)
	}
	if a, ok := content.Attributes["sensitive"]; ok {
		diags = append(diags, gohcl.DecodeExpression(a.Expr, nil, &o.Sensitive)...)
	}
	f.Outputs = append(f.Outputs, o)
	return diags
}
