package engine

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/flowdev/flow/engine/live"
	"github.com/flowdev/flow/engine/ops"
	"github.com/flowdev/flow/engine/state"
)

// While a session holds a state file, it answers other processes' reads of it (flow
// status, runs, logs, ui) on the state's socket (engine/live): its own run from the
// walk as it goes, every other run from the file it holds. Session's Runs, Status and
// Log ask that socket first, and read the file when no process answers, so a reader
// gets the same records whoever holds the file, and never waits for its lock.

// liveSource is what a holding session serves. Safe for concurrent use.
type liveSource struct {
	store *state.Store

	mu   sync.Mutex
	run  *RunRecord // the walk's run, once it started
	walk Progress
}

// liveStatus is a run and its instance records as the socket carries them.
type liveStatus struct {
	Run       *RunRecord       `json:"run"`
	Instances []InstanceRecord `json:"instances"`
}

func (s *liveSource) started(run *RunRecord, walk Progress) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.run, s.walk = run, walk
}

func (s *liveSource) current(runID uint64) (*RunRecord, Progress, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.run, s.walk, runID == 0 || (s.run != nil && runID == s.run.ID)
}

// Status is the walk's run as it goes, or a run of the file. Before the walk starts
// it is the file's run (the latest with 0), as this process holds it: a run recorded
// as running is then really running.
func (s *liveSource) Status(runID uint64) (any, error) {
	run, walk, own := s.current(runID)
	if own && walk != nil {
		cp := *run
		cp.Status = Running
		return liveStatus{Run: &cp, Instances: lean(walk.Snapshot())}, nil
	}
	rec, recs, err := ops.ReadStatus(s.store, runID, true)
	if err != nil {
		return nil, err
	}
	return liveStatus{Run: rec, Instances: lean(recs)}, nil
}

func (s *liveSource) Runs() (any, error) {
	run, _, _ := s.current(0)
	var own uint64
	if run != nil {
		own = run.ID
	}
	return ops.ReadRuns(s.store, own)
}

func (s *liveSource) Log(runID uint64, addr string) ([]byte, error) {
	_, walk, own := s.current(runID)
	if !own || walk == nil {
		return ops.ReadLog(s.store, runID, addr)
	}
	if out, ok := walk.Log(addr); ok {
		return out, nil
	}
	return nil, fmt.Errorf("the run in progress has no task instance %s", addr)
}

// lean drops what a reader of statuses never shows (an object's inputs and outputs,
// the hashes of its attributes), which would make every answer about a large run large.
func lean(recs []InstanceRecord) []InstanceRecord {
	out := make([]InstanceRecord, len(recs))
	for i, r := range recs {
		r.Inputs, r.Withheld, r.Outputs, r.AttrHashes = nil, nil, nil, nil
		if len(r.Deposed) > 0 { // readers count them; what they hold stays in the state
			r.Deposed = make([]*state.Instance, len(r.Deposed))
			for j := range r.Deposed {
				r.Deposed[j] = &state.Instance{Address: r.Address}
			}
		}
		out[i] = r
	}
	return out
}

// serve answers for the state h holds until h is closed; a socket that cannot be
// opened costs only the other terminals' view, so it is a warning. A state in
// PostgreSQL is read by other terminals from the database itself.
func (s *Session) serve(h *held, req *Request) {
	if state.IsURL(s.file) {
		return
	}
	h.live = &liveSource{store: h.store}
	stop, err := live.Serve(s.file, h.live)
	if err != nil {
		if log := req.logger(nil); log != nil {
			log.Warn("flow status from another terminal will not work", "error", err)
		}
		return
	}
	h.release = stop
}

// HolderError is a read of a state file that a flow process holds, which that process
// answered with an error (Answer), or did not answer.
type HolderError struct {
	Path   string
	Answer string
}

func (e *HolderError) Error() string {
	if e.Answer != "" {
		return e.Answer
	}
	return e.Path + " is in use by another flow process, which did not answer"
}

// read answers from the process that holds the state file when one does, else from
// the file. The socket is asked first: opening a held file waits for its lock. A file
// found held is asked again for a moment, since its holder may be between locking it
// and answering.
func (s *Session) read(ask func() error, fromFile func(*state.Store) error) error {
	if err := s.holderAnswer(ask()); !errors.Is(err, live.ErrNotServing) {
		return err
	}
	store, err := s.openRead()
	if errors.As(err, new(*BusyError)) {
		for range 10 {
			if err := s.holderAnswer(ask()); !errors.Is(err, live.ErrNotServing) {
				return err
			}
			time.Sleep(100 * time.Millisecond)
		}
		return &HolderError{Path: s.path}
	}
	if err != nil {
		return err
	}
	defer store.Close()
	return fromFile(store)
}

// holderAnswer turns what the holding process answered into the session's error.
func (s *Session) holderAnswer(err error) error {
	if errors.Is(err, live.ErrAnswer) {
		return &HolderError{Path: s.path, Answer: strings.TrimPrefix(err.Error(), live.ErrAnswer.Error()+": ")}
	}
	return err
}

// askStatus decodes the holder's answer for run runID.
func (s *Session) askStatus(runID uint64, st *liveStatus) error {
	var raw json.RawMessage
	if err := live.Status(s.file, runID, &raw); err != nil {
		return err
	}
	if err := json.Unmarshal(raw, st); err != nil || st.Run == nil {
		// A process of an older flow answers with its CLI's document.
		return &HolderError{Path: s.path, Answer: s.path + " is held by a flow process of another version, which answers in another form; ask again when it is done"}
	}
	return nil
}
