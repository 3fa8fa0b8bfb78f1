package tasks

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// Caps is what a type's tasks can do beyond Validate and Run: the optional interfaces
// (Destroyer, Prober) the task its New returns implements. Register finds them once
// (Init), when the type is registered, and keeps them on the Type: the engine asks the Type
// (Destroys, Probes), never a fresh task. Only where a method is called is the task
// itself asserted to the interface.
//
// Described is not a capability here: it changes how a task is decoded, and is asked
// where it is decoded. The plugin protocol's Check is a plugin's capability
// (plugin.Checker): flow sees a plugin type that checks as a Prober.
type Caps struct {
	Destroys bool // Destroyer: flow destroy and --replace undo what Run made
	Probes   bool // Prober: refresh looks at what a recorded success made
}

// Init finds what t's tasks can do, calling New once: the one place a type's optional
// interfaces are asserted. It fails, naming every problem, when t's documentation
// claims a capability its tasks lack or leaves one undocumented (checkCaps). Register
// calls it; so does whoever hands out a Type without registering it (the plugin host,
// for the types a plugin serves). t.New must be set.
func (t *Type) Init() error {
	task := t.New()
	_, destroys := task.(Destroyer)
	_, probes := task.(Prober)
	t.caps = Caps{Destroys: destroys, Probes: probes}
	return checkCaps(t)
}

// Caps is what t's tasks can do, as Init found it; a Type that was never registered
// (or Init) has none.
func (t *Type) Caps() Caps { return t.caps }

// Destroys reports whether t's instances implement Destroyer.
func (t *Type) Destroys() bool { return t.caps.Destroys }

// Probes reports whether t's instances implement Prober.
func (t *Type) Probes() bool { return t.caps.Probes }

// undoVerb is how the Undo of a Destroyer begins ("flow destroy removes ..."), and the
// Undo of any other type must not: it says why nothing is undone.
const undoVerb = "flow destroy "

// checkCaps returns every way t's documentation says something its Caps deny: the
// texts flow shows (Undo, Refresh) and the settings flow destroy reads (UndoAttr,
// DestroyReads) follow from the interfaces, so a type cannot claim one it lacks.
func checkCaps(t *Type) error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	c := t.caps
	switch {
	case c.Probes && t.Refresh == "":
		bad("it implements tasks.Prober without Refresh (what its Probe looks at)")
	case !c.Probes && t.Refresh != "":
		bad("it has Refresh but does not implement tasks.Prober")
	}
	switch {
	case c.Destroys && t.Undo == UndoNothing:
		bad("it implements tasks.Destroyer, but its Undo says there is nothing to undo")
	case !c.Destroys && strings.HasPrefix(t.Undo, undoVerb):
		bad("its Undo says what flow destroy does, but it does not implement tasks.Destroyer")
	}
	if !c.Destroys && t.UndoAttr != "" {
		bad("it has UndoAttr but does not implement tasks.Destroyer")
	}
	if !c.Destroys && len(t.DestroyReads) > 0 {
		bad("it has DestroyReads but does not implement tasks.Destroyer")
	}
	return errors.Join(errs...)
}

// DestroyFunc and ProbeFunc are Destroyer's and Prober's methods as functions.
type (
	DestroyFunc func(ctx context.Context, env *Env, recorded Outputs) error
	ProbeFunc   func(ctx context.Context, env *Env, recorded Outputs) (drift string, err error)
)

// WithCaps returns t implementing Destroyer when destroy is not nil and Prober when
// probe is not nil, and neither interface otherwise: for a type whose capabilities are
// known only once it is loaded (a plugin's, as the plugin declares them), since Init
// finds a type's capabilities by asserting its tasks' interfaces.
func WithCaps(t Described, destroy DestroyFunc, probe ProbeFunc) Described {
	switch {
	case destroy != nil && probe != nil:
		return &destroyerProber{Described: t, destroy: destroy, probe: probe}
	case destroy != nil:
		return &destroyer{Described: t, destroy: destroy}
	case probe != nil:
		return &prober{Described: t, probe: probe}
	}
	return t
}

type (
	destroyer struct {
		Described
		destroy DestroyFunc
	}
	prober struct {
		Described
		probe ProbeFunc
	}
	destroyerProber struct {
		Described
		destroy DestroyFunc
		probe   ProbeFunc
	}
)

var (
	_ Destroyer = (*destroyer)(nil)
	_ Prober    = (*prober)(nil)
	_ Destroyer = (*destroyerProber)(nil)
	_ Prober    = (*destroyerProber)(nil)
)

func (t *destroyer) Destroy(ctx context.Context, env *Env, recorded Outputs) error {
	return t.destroy(ctx, env, recorded)
}

func (t *prober) Probe(ctx context.Context, env *Env, recorded Outputs) (string, error) {
	return t.probe(ctx, env, recorded)
}

func (t *destroyerProber) Destroy(ctx context.Context, env *Env, recorded Outputs) error {
	return t.destroy(ctx, env, recorded)
}

func (t *destroyerProber) Probe(ctx context.Context, env *Env, recorded Outputs) (string, error) {
	return t.probe(ctx, env, recorded)
}
