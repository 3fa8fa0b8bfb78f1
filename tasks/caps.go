package tasks

import (
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
