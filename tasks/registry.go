package tasks

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/zclconf/go-cty/cty"
)

// Type describes one registered task type.
type Type struct {
	// Name is the first label of a task block, e.g. "exec".
	Name string
	// Summary is one line for `flow tasks`; Doc is the longer text for `flow tasks NAME`.
	Summary string
	Doc     string
	// New returns a pointer to a zero config struct with hcl tags. Attribute
	// documentation comes from each field's `doc` tag.
	New func() Task
	// Outputs declares what Run returns, so references are checked before a run.
	Outputs []Output
	// Example is a complete task block, shown by `flow tasks NAME`.
	Example string
	// Undo says what `flow destroy` does with what the task made: how a Destroyer
	// undoes it ("flow destroy removes ..."), that there is nothing to undo
	// (UndoNothing), or why it cannot. Register rejects a type whose Undo says what
	// flow destroy does but that is no Destroyer, and a Destroyer with UndoNothing.
	Undo string
	// UndoAttr, for a Destroyer, names an attribute without which an instance has
	// nothing to undo (exec's undo script): flow destroy leaves such instances alone.
	// It is left out of the fingerprint: changing how a task is undone re-runs nothing.
	UndoAttr string
	// DestroyReads, for a Destroyer, names every attribute its Destroy reads. With it,
	// flow destroy needs only these known: the others (a secret input, which is never
	// stored) are decoded as zero values and Validate is not called. Without it, every
	// input must be known and the task must validate, as for Run.
	DestroyReads []string
	// Refresh, for a Prober, says what its Probe looks at ("the instance exists and
	// runs"), shown by `flow tasks NAME`; Register requires it of every Prober and of
	// no other type.
	Refresh string

	// caps is what its tasks implement, found by Register (see Caps).
	caps Caps
}

var errNoPluginLoader = errors.New("this flow binary cannot start plugins")

// Output declares one output attribute of a task type.
type Output struct {
	Name string
	Type cty.Type
	Doc  string
	// Sensitive outputs (tokens, keys) are redacted wherever a sensitive variable
	// is, and never stored: a resumed run runs their task again. A task may also
	// mark one output value sensitive at run time with SensitiveMark.
	Sensitive bool
	// Clean outputs never carry input material (a written file's path, a count),
	// so a sensitive input does not make them sensitive.
	Clean bool
}

type mark string

// SensitiveMark marks a cty value as secret: the engine redacts its text from
// every line it prints and keeps it out of the state.
const SensitiveMark = mark("sensitive")

// Registry maps type names to Types. The zero value is not usable; call NewRegistry.
// A Registry is filled once at start-up and then only read, so reads need no locking;
// Register must not be called concurrently with anything else.
type Registry struct {
	types   map[string]*Type
	plugins PluginLoader // nil: flows cannot name plugins (SetPluginLoader)
	// servedBy names, for each type a plugin serves, the plugin block's name.
	servedBy map[string]string
}

// NewRegistry returns an empty registry. main builds the real one explicitly so tests
// can pass registries of their own.
func NewRegistry() *Registry {
	return &Registry{types: map[string]*Type{}}
}

// Register adds t. It fails on an empty or duplicate name or a missing constructor.
// It calls New once to find what the type's tasks can do (Caps) and fails, naming
// every problem, when the type's documentation claims a capability its tasks lack or
// leaves one undocumented (Init). It does not reflect over the config struct:
// every command would pay for that at start-up, so Check does it, and the tests of
// whoever builds a registry call Check (as Terraform providers call InternalValidate
// in their tests).
func (r *Registry) Register(t Type) error {
	if t.Name == "" || t.New == nil {
		return fmt.Errorf("register task type %q: name and constructor are required", t.Name)
	}
	if _, dup := r.types[t.Name]; dup {
		return fmt.Errorf("register task type %q: already registered", t.Name)
	}
	if err := t.Init(); err != nil {
		return fmt.Errorf("register task type %q: %w", t.Name, err)
	}
	r.types[t.Name] = &t
	return nil
}

// Check verifies every registered config struct: its hcl tags give valid attributes
// (Attributes), no attribute name collides with the engine's shared settings, and
// DestroyReads names only attributes. It returns every problem found, joined.
func (r *Registry) Check() error {
	var errs []error
	for _, name := range r.Names() {
		attrs, err := Attributes(r.types[name].New())
		if err != nil {
			errs = append(errs, fmt.Errorf("task type %q: %w", name, err))
			continue
		}
		known := map[string]bool{}
		for _, a := range attrs {
			known[a.Name] = true
			if IsMetaAttribute(a.Name) {
				errs = append(errs, fmt.Errorf("task type %q: attribute %q is reserved for the engine", name, a.Name))
			}
		}
		for _, read := range r.types[name].DestroyReads {
			if !known[read] {
				errs = append(errs, fmt.Errorf("task type %q: DestroyReads names %q, which is no attribute", name, read))
			}
		}
	}
	return errors.Join(errs...)
}

// Add registers the type each of types returns: every family's Register is one call
// of it, over one function per type (execType, launchType, ...).
func (r *Registry) Add(types ...func() Type) error {
	for _, t := range types {
		if err := r.Register(t()); err != nil {
			return err
		}
	}
	return nil
}

// MustRegister is Register for start-up code, where a failure is a programming error.
func (r *Registry) MustRegister(t Type) {
	if err := r.Register(t); err != nil {
		panic(err)
	}
}

// Lookup returns the type registered under name.
func (r *Registry) Lookup(name string) (*Type, bool) {
	t, ok := r.types[name]
	return t, ok
}

// Names returns every registered type name, sorted.
func (r *Registry) Names() []string {
	names := make([]string, 0, len(r.types))
	for n := range r.types {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// SharedSettings are the settings every task block accepts, as written in a flow; the
// engine owns them. The decoder's schema (SharedSchema), `flow tasks`, `flow validate`
// and the generated pages all read them from here. A block is written NAME { ATTR, ... }.
var SharedSettings = []string{
	"depends_on", "for_each", "timeout", "retry { attempts, delay, max_delay }", "description",
	"retain_on_destroy", "max_parallel",
}

// SharedSetting is one of SharedSettings: an attribute, or a block (Block lists the
// block's attributes).
type SharedSetting struct {
	Name  string
	Block []string
}

// SharedSchema is SharedSettings parsed, in their order.
func SharedSchema() []SharedSetting {
	out := make([]SharedSetting, 0, len(SharedSettings))
	for _, s := range SharedSettings {
		name, rest, isBlock := strings.Cut(s, " {")
		set := SharedSetting{Name: strings.TrimSpace(name)}
		if isBlock {
			for _, a := range strings.Split(strings.TrimSuffix(strings.TrimSpace(rest), "}"), ",") {
				set.Block = append(set.Block, strings.TrimSpace(a))
			}
		}
		out = append(out, set)
	}
	return out
}

// metaAttributes are the names of SharedSettings.
var metaAttributes = func() map[string]bool {
	m := map[string]bool{}
	for _, s := range SharedSchema() {
		m[s.Name] = true
	}
	return m
}()

// IsMetaAttribute reports whether name is one of the shared task settings.
func IsMetaAttribute(name string) bool { return metaAttributes[name] }
