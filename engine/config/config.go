// Package config owns reading a flow: parsing its HCL files, decoding them in phases
// (variables, locals, tasks, outputs) into a Flow whose task bodies stay undecoded with
// their source ranges, checking every reference statically, and assigning variable
// values. Every mistake is an hcl.Diagnostic on the narrowest range; all are collected.
//
// It does not own expanding for_each into instances, the dependency graph, or running
// tasks: the engine does those from a Flow. It does start plugins: a plugin block is
// loaded through the registry's tasks.PluginLoader, which starts the plugin to learn
// the types it serves (Flow.Plugins records what was started).
package config

import (
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/flowdev/flow/tasks"
)

// Flow is a parsed, statically checked flow. It is immutable once Load returns.
type Flow struct {
	// Path is the file or directory as the user gave it; Dir is the directory that
	// relative paths in file() and templatefile() resolve against.
	Path string
	Dir  string
	// WorkDir is the absolute directory the flow's tasks act in (the run's): path.cwd,
	// and where its plugins' processes start.
	WorkDir string
	// givenDir is Dir as the user gave it, so a module's files are named like the
	// flow's in diagnostics.
	givenDir string
	// Files maps file name to its parsed file, for printing diagnostics with their
	// source snippet and enclosing block.
	Files map[string]*hcl.File
	// Hash is a hex SHA-256 over the names and contents of the flow's files.
	Hash string
	// Decoded reports that every file parsed and its blocks were decoded and checked,
	// errors or not; without it Load stopped at syntax errors.
	Decoded bool

	Variables map[string]*Variable
	Locals    map[string]*Local
	// Tasks are in declaration order (files sorted by name).
	Tasks   []*Task
	Outputs []*Output
	// Modules are the module calls, in declaration order; each holds its loaded module.
	Modules []*ModuleCall
	// Plugins are the plugins the flow's plugin blocks name, as found and started.
	Plugins []tasks.PluginUse

	taskIndex   map[string]*Task
	moduleIndex map[string]*ModuleCall
	defaulted   map[string]bool // by the last Assign
}

// Defaulted reports whether the last Assign gave variable name its declared default,
// no value having been given.
func (f *Flow) Defaulted(name string) bool { return f.defaulted[name] }

// Module returns the module call declared as module "NAME".
func (f *Flow) Module(name string) (*ModuleCall, bool) {
	m, ok := f.moduleIndex[name]
	return m, ok
}

// Task returns the task block declared as TYPE.NAME.
func (f *Flow) Task(addr string) (*Task, bool) {
	t, ok := f.taskIndex[addr]
	return t, ok
}

// Variable is a `variable "NAME"` block.
type Variable struct {
	Name        string
	Type        cty.Type // cty.DynamicPseudoType when no type is given
	Default     cty.Value
	HasDefault  bool
	Description string
	Sensitive   bool
	DeclRange   hcl.Range
}

// Local is one attribute of a `locals` block.
type Local struct {
	Name string
	Expr hcl.Expression
	// Refs are the task references the expression makes; a local may not make any.
	DeclRange hcl.Range
}

// Task is a `task "TYPE" "NAME"` block. Body holds the type's own attributes,
// undecoded, so each instance can be evaluated with its own `each` and dependencies.
type Task struct {
	Type      string
	Name      string
	Addr      string // TYPE.NAME
	Kind      *tasks.Type
	Attrs     []tasks.Attribute
	DeclRange hcl.Range

	Description string
	// RetainOnDestroy leaves what the task made in place on flow destroy (a cache, an
	// image other runs reuse, or what goes anyway with something destroyed later);
	// what the task depends on is destroyed as usual.
	RetainOnDestroy bool
	// MaxParallel bounds how many of the task's instances run at once, across module
	// instances too (instances that share a lock or a build cache); 0 means no bound
	// but the run's parallelism.
	MaxParallel int
	ForEach     hcl.Expression // nil without for_each
	DependsOn   []Ref
	dependsOn   []hcl.Expression
	Timeout     hcl.Expression // nil without timeout
	Retry       *Retry

	// Body is the remaining body: the type's own attributes, already checked against
	// its schema (unknown and missing attributes are reported by Load).
	Body       hcl.Body
	Attributes hcl.Attributes
	// Refs are the task references in Attributes, Timeout and Retry, with their ranges.
	Refs []Ref
	// Read reports whether an expression of the flow (a task's, a module call's input,
	// an output) reads this task's value; the engine keeps finished instances' values
	// only for such tasks, since nothing else can look them up.
	Read bool
	// ReadsEach reports whether one of Exprs refers to each. Without it, the task's
	// instances in one module instance evaluate alike.
	ReadsEach bool
}

// Exprs returns every expression evaluated per instance: the type's attributes (by
// name), timeout and retry.
func (t *Task) Exprs() []hcl.Expression {
	exprs := make([]hcl.Expression, 0, len(t.Attributes)+4)
	for _, a := range sortedAttributes(t.Attributes) {
		exprs = append(exprs, a.Expr)
	}
	if t.Timeout != nil {
		exprs = append(exprs, t.Timeout)
	}
	if t.Retry != nil {
		for _, e := range []hcl.Expression{t.Retry.Attempts, t.Retry.Delay, t.Retry.MaxDelay} {
			if e != nil {
				exprs = append(exprs, e)
			}
		}
	}
	return exprs
}

// Retry is a task's `retry` block. Expressions are evaluated per instance.
type Retry struct {
	Attempts hcl.Expression
	Delay    hcl.Expression
	MaxDelay hcl.Expression
	Range    hcl.Range
}

// RetryPolicy is an evaluated retry block.
type RetryPolicy struct {
	Attempts int
	Delay    time.Duration
	MaxDelay time.Duration
}

// Output is an `output "NAME"` block, evaluated after the run.
type Output struct {
	Name        string
	Expr        hcl.Expression
	Description string
	Sensitive   bool
	Refs        []Ref
	DeclRange   hcl.Range
}
