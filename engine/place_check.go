package engine

import (
	"os"
	"slices"

	"github.com/flowdev/flow/engine/ops"
	"github.com/flowdev/flow/engine/state"
)

// samePlace refuses, with an *ElsewhereError, a new run in the process's working
// directory while store holds live instances made in another one, unless move: one
// state, one place. A record an older flow wrote, which kept no directory, counts as
// made in its run's directory.
func (s *Session) samePlace(store *state.Store, move bool) error {
	if move {
		return nil
	}
	here, err := os.Getwd()
	if err != nil {
		return err
	}
	live, err := ops.LiveInstances(store)
	if err != nil {
		return err
	}
	runDirs := map[uint64]string{}
	e := &ElsewhereError{Path: s.path, Here: here}
	for _, o := range live {
		dir := o.Rec.Dir
		if dir == "" {
			if _, ok := runDirs[o.Run]; !ok {
				if run, err := store.GetRun(o.Run); err == nil {
					runDirs[o.Run] = run.Dir
				}
			}
			dir = runDirs[o.Run]
		}
		if dir == "" || dir == here {
			continue
		}
		e.Count++
		if !slices.Contains(e.Dirs, dir) {
			e.Dirs = append(e.Dirs, dir)
		}
	}
	if e.Count == 0 {
		return nil
	}
	slices.Sort(e.Dirs)
	return e
}
