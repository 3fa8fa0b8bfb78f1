package engine

import "github.com/flowdev/flow/engine/state"

// What a run of a flow builds on is decided from the state's latest run by one table,
// basisOf: Run follows it and Preview shows it, so `flow plan` previews the run that
// `flow run` starts (or says why it refuses).

// basisKind is how a run starts.
type basisKind int

const (
	// startNew: a new run; every instance runs unless its object is there already.
	startNew basisKind = iota
	// startFromCheckpoints: a new run with --target or --replace, which starts from the
	// latest run's records, so what succeeded there stands.
	startFromCheckpoints
	// startResume: the latest run did not finish; flow resume continues it.
	startResume
)

// basis is what a run builds on.
type basis struct {
	kind basisKind
	// from is the run whose records it starts from (startFromCheckpoints, startResume).
	from *state.Run
	// last, for startNew, is the flow's latest run, which the preview's reasons name.
	last *state.Run
	// refused: a run refuses without --new, since latest did not finish (a resume
	// continues a run; a destroy is finished by flow destroy). Preview shows what
	// resuming would do, or for a destroy the new run that --new starts.
	refused bool
}

// basisOf is the table, for the state's latest run (nil: none) and req:
//
//	latest                                   --target/--replace  --new   basis
//	none, or another flow's (without --move)                             new
//	a destroy that succeeded                                             new, after it
//	a destroy that did not finish                                no      new, refused
//	a destroy that did not finish                                yes     new, after it
//	settled (succeeded, or targets done)     no                          new, after it
//	settled                                  yes                         from its checkpoints
//	unfinished                               -                   no      resume, refused
//	unfinished                               yes                 yes     from its checkpoints
//	unfinished                               no                  yes     new, after it
//
// Another flow's latest run is an *OtherFlowError, unless req.Move (the flow moved
// with its project) or that run was a destroy that succeeded.
func (s *Session) basisOf(latest *state.Run, req *Request) (basis, error) {
	if err := s.sameFlow(latest, req.Flow); err != nil && !req.Move {
		return basis{}, err
	}
	ours := latest != nil && (latest.Flow == absPath(req.Flow) || req.Move)
	switch {
	case !ours:
		return basis{kind: startNew}, nil
	case latest.Destroys != 0:
		return basis{kind: startNew, last: latest, refused: latest.Status != state.Succeeded && !req.New}, nil
	case settled(latest) && req.selective(), !settled(latest) && req.New && req.selective():
		return basis{kind: startFromCheckpoints, from: latest}, nil
	case settled(latest), req.New:
		return basis{kind: startNew, last: latest}, nil
	}
	return basis{kind: startResume, from: latest, refused: true}, nil
}
