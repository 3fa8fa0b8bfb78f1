package tasks

import "context"

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

// UndoText is what `flow tasks` says about how t is undone.
func (t *Type) UndoText() string {
	switch {
	case t.Undo != "":
		return t.Undo
	case t.New != nil:
		if _, ok := t.New().(Destroyer); ok {
			return "flow destroy undoes it."
		}
	}
	return "flow destroy cannot undo it: it is left as it is."
}
