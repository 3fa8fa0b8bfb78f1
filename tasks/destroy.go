package tasks

import (
	"context"
	"strings"
)

// Destroyer is a task that can undo what its Run created. `flow destroy` decodes the
// task from the inputs the run evaluated (the run's recorded variables and its
// dependencies' recorded outputs) and calls Destroy, in reverse dependency order,
// with the outputs that run recorded for it (nil when they were not stored, or the
// run did not finish it: an instance that failed may have created part of its
// object, so Destroy must not rely on them).
//
// Destroy must be idempotent like Run: what is already gone is reported as such and
// is not an error, because a destroy that was interrupted runs again on resume. It
// must honour ctx and stream to env.Stdout like Run.
type Destroyer interface {
	Destroy(ctx context.Context, env *Env, recorded Outputs) error
}

// Undo texts for task types that change nothing that lasts, or that cannot be
// undone; a Type's Undo says which applies, shown by `flow tasks`.
const (
	UndoNothing = "Nothing to undo: it creates nothing that outlives the run."
)

// UndoText is how t is undone, in full: its Undo, or what follows from whether it is
// a Destroyer. `flow tasks`, the generated pages and flow destroy all read it here.
func (t *Type) UndoText() string {
	switch {
	case t.Undo != "":
		return t.Undo
	case t.Destroys():
		return "flow destroy undoes it."
	}
	return "flow destroy cannot undo it: it is left as it is."
}

// UndoGist is UndoText up to its first colon or full stop, lower-cased: what flow
// destroy says of an instance it leaves as it is.
func (t *Type) UndoGist() string {
	text := t.UndoText()
	if i := strings.IndexAny(text, ":."); i > 0 {
		text = text[:i]
	}
	if text != "" {
		text = strings.ToLower(text[:1]) + text[1:]
	}
	return text
}

// UndoColumn says in a few words what flow destroy does with t's instances, for the
// list of `flow tasks`: undoes them, only those that set UndoAttr, nothing to undo,
// or not undone.
func (t *Type) UndoColumn() string {
	destroyer := t.Destroys()
	switch {
	case destroyer && t.UndoAttr != "":
		return "with " + t.UndoAttr
	case destroyer:
		return "undoes"
	case t.Undo == UndoNothing:
		return "nothing to undo"
	}
	return "not undone"
}
