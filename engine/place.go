package engine

import (
	"os"
	"path/filepath"

	"github.com/flowdev/flow/engine/ops"
	"github.com/flowdev/flow/engine/state"
)

// place is where a run's flow is read from and its tasks execute.
type place struct {
	flow string // the flow's absolute path
	dir  string // the working directory; "" for a record that kept none (the caller's)
}

// placeOf returns where run's flow and working directory are: as recorded, or, with
// moved (--flow), the flow at moved. The working directory is then the recorded one
// while it exists, else the directory that stands to moved as the recorded one stood
// to the recorded flow (a whole project moved). A flow or directory that is gone is a
// *PlaceError.
func placeOf(run *state.Run, moved string) (place, error) {
	p := place{flow: run.Flow, dir: run.Dir}
	if moved != "" {
		p.flow = absPath(moved)
		if p.dir != "" && !isDir(p.dir) {
			if rel, err := filepath.Rel(filepath.Dir(run.Flow), run.Dir); err == nil {
				p.dir = filepath.Join(filepath.Dir(p.flow), rel)
			}
		}
	}
	if _, err := os.Stat(p.flow); err != nil {
		return p, &PlaceError{Run: run.ID, Flow: p.flow, Moved: moved != "", Err: err}
	}
	if p.dir != "" && !isDir(p.dir) {
		return p, &PlaceError{Run: run.ID, Dir: p.dir, Moved: moved != ""}
	}
	return p, nil
}

func isDir(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}

// absolute returns paths made absolute against the current directory, so they name
// the same files wherever the run they load acts.
func absolute(paths []string) []string {
	out := make([]string, len(paths))
	for i, p := range paths {
		out[i] = absPath(p)
	}
	return out
}

// madeElsewhere is what a run in the process's working directory would take over with
// --move: the live instances of store (live, read from it) made in other directories, as an
// *ElsewhereError; nil when there are none.
func (s *Session) madeElsewhere(store *state.Store, live map[string]ops.Orphan) (*ElsewhereError, error) {
	here, err := os.Getwd()
	if err != nil {
		return nil, err
	}
	if n, dirs := ops.MadeElsewhere(store, live, here); n > 0 {
		return &ElsewhereError{Path: s.path, Here: here, Dirs: dirs, Count: n}, nil
	}
	return nil, nil
}
