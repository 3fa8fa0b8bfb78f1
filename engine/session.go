package engine

import (
	"context"
	"io"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/flowdev/flow/engine/config"
	"github.com/flowdev/flow/engine/ops"
	"github.com/flowdev/flow/engine/plan"
	"github.com/flowdev/flow/engine/state"
	"github.com/flowdev/flow/tasks"
)

// Session is one command's use of a state file. Run, Resume and Destroy hold the file
// for the whole walk; they decide whether the request starts a run, continues one or is
// refused (a typed error: *NoRunsError, *UnfinishedError, *NothingToDoError), and
// write every run record. Preview, Runs, Status and Log only read it.
type Session struct {
	path string // as given, for messages
	file string // absolute: Resume and Destroy change the working directory
	reg  *tasks.Registry
}

// NewSession returns a session on the state file at path, which it opens (and a run
// creates) only when a method needs it.
func NewSession(path string, reg *tasks.Registry) *Session {
	file := path
	if !state.IsURL(path) {
		file = absPath(path)
	}
	return &Session{path: state.Display(path), file: file, reg: reg}
}

// Path is the state file's path.
func (s *Session) Path() string { return s.path }

// Request is one command's flow, variables, selection and how to execute it.
type Request struct {
	// Flow is the flow's path for Run and Preview. Resume and Destroy read the flow
	// from the path the run recorded, or with Flow set from there (--flow: the flow
	// moved); they execute in the run's working directory (see Session.Resume).
	Flow string
	// VarFiles and Vars set variables (--var-file, --var NAME=VALUE); Environ is
	// read for FLOW_VAR_ variables. A resume and a destroy start from the values the
	// run recorded.
	VarFiles, Vars, Environ []string
	// New starts a new run even if the latest one did not finish (run --new).
	New bool
	// Targets and Replace are normalised addresses or prefixes (--target, --replace).
	Targets, Replace []string
	// NoRefresh trusts recorded successes without looking at their objects
	// (--refresh=false; see Options.NoRefresh).
	NoRefresh bool
	// KeepRemoved leaves the instances the state holds and the flow no longer has as
	// they are (run --keep-removed): a later run, or a destroy, undoes them.
	KeepRemoved bool
	// Move lets a new run act in a directory other than the one the state's instances
	// were made in (run --move: the project moved): their undo then acts here too.
	Move        bool
	Parallelism int
	FailFast    bool
	// TransientRetry is Options.TransientRetry.
	TransientRetry time.Duration
	// Out receives task output and a line per state change; Live leaves task output
	// to a live view (see Options.Live).
	Out  io.Writer
	Live bool
	// Logger returns the logger for a walk, redacting with redact; nil: none.
	Logger func(redact func(string) string) hclog.Logger
	// Warn receives the flow's warnings (diagnostics that are not errors).
	Warn func(*config.Flow, hcl.Diagnostics)
	// Observer, if set, is told when the walk starts.
	Observer Observer
	// Confirm, if set, is asked by Destroy, with what it would do, before it undoes
	// anything; false declines (see Session.Destroy). It is not asked when nothing
	// would be undone.
	Confirm func(*DestroyPreview) bool
}

// options is the one way a request becomes a walk's Options: what every walk of run
// takes from req, over store, redacting with redact. Each walk adds its own (what it
// resumes, what it undoes, how it finishes).
func (req *Request) options(run *state.Run, store *state.Store, redact func(string) string) Options {
	return Options{RunID: run.ID, Store: store, Dir: run.Dir, Lineage: lineageOf(store), Parallelism: req.Parallelism,
		FailFast: req.FailFast, TransientRetry: req.TransientRetry, Replace: req.Replace,
		NoRefresh: req.NoRefresh, Moved: req.Move, Out: req.Out, Logger: req.logger(redact), Live: req.Live}
}

// selective reports whether the request acts on what an earlier run left.
func (r *Request) selective() bool { return len(r.Targets) > 0 || len(r.Replace) > 0 }

// Observer follows a Run, Resume or Destroy: the live view.
type Observer interface {
	// Started is called just before the walk begins; w answers from then on.
	Started(s Start, w Progress)
}

// Progress is what a live view and other terminals read while a walk goes on, from
// any goroutine: every record the walk keeps, in plan order, and each instance's output.
type Progress interface {
	Snapshot() []InstanceRecord
	// Log is the output captured so far for addr; false when the walk has no addr.
	Log(addr string) ([]byte, bool)
	// LastLine is the last line addr wrote so far, or "".
	LastLine(addr string) string
}

// StartKind says what a walk continues or begins.
type StartKind int

const (
	NewRun          StartKind = iota // a new run of the flow
	FromCheckpoints                  // a new run starting from an earlier run's records (--target, --replace)
	ResumedRun                       // the latest run, continued
	NewDestroy                       // a destroy of the latest run
	ResumedDestroy                   // an unfinished destroy, continued
)

// Start describes a walk as it begins.
type Start struct {
	Kind StartKind
	Run  *RunRecord
	// From is the run whose checkpoints a new run starts from, or the run a destroy
	// undoes.
	From uint64
	// FlowChanged: the flow's files changed since the run (or, for a destroy, the
	// run it undoes) started.
	FlowChanged bool
	// Instances is how many instances the walk visits.
	Instances int
}

// Outcome is how a walk ended.
type Outcome struct {
	Run    *RunRecord // as recorded at the end: a targeted run may be pending
	Result *Result
	Loaded *Loaded
	// Walker answers Log for the summary.
	Walker Progress
	// Err is non-nil when a checkpoint or the run record could not be written.
	Err error
}

// held is the state file open for writing, with what the session serves of it to
// other processes (see session_live.go) and how it stops.
type held struct {
	store   *state.Store
	latest  *state.Run
	live    *liveSource
	release func()
}

// started tells what follows the walk that it begins: the answers to other processes
// and the request's observer.
func (h *held) started(req *Request, s Start, w Progress) {
	if h.live != nil {
		h.live.started(s.Run, w)
	}
	if req.Observer != nil {
		req.Observer.Started(s, w)
	}
}

// InterruptWait bounds how long an interrupted walk waits for the state's database:
// after a Ctrl-C, no call on a PostgreSQL state waits more than InterruptWait for a
// broken connection (those waiting already included), so an interrupt during an
// outage ends the walk within InterruptWait plus the tasks' stop grace period; what
// could not be written then stays unwritten, and the summary counts what was.
const InterruptWait = 10 * time.Second

// giveUpOnInterrupt bounds the state's waits by InterruptWait once ctx is cancelled,
// until stop is called.
func (h *held) giveUpOnInterrupt(ctx context.Context) (stop func() bool) {
	return context.AfterFunc(ctx, func() { h.store.GiveUpWithin(InterruptWait) })
}

func (h *held) close() {
	if h.release != nil {
		h.release()
	}
	h.store.Close()
}

// hold opens the state file for writing. When it does not exist and first is set,
// first (which loads the flow) gives the run to create it with: one durable step
// fewer than creating it empty and then the run, and a flow that does not load leaves
// no state file behind. created reports that the run is first's. Without first, a
// missing file is a *NoStateError and nothing is created.
func (s *Session) hold(req *Request, first func() (*state.Run, error)) (h *held, created *state.Run, err error) {
	var opts state.Options
	if exists, err := state.Exists(s.file); err != nil {
		return nil, nil, err
	} else if !exists {
		if first == nil {
			return nil, nil, &NoStateError{Path: s.path}
		}
		if opts.FirstRun, err = first(); err != nil {
			return nil, nil, err
		}
	}
	if log := req.logger(nil); log != nil {
		opts.Waiting = func(err error, left time.Duration) {
			if err != nil {
				log.Warn("the state's database connection broke; waiting for it", "state", s.path, "for at most", left.Round(time.Second), "error", err)
			} else {
				log.Warn("the state's database is back; the run goes on", "state", s.path)
			}
		}
	}
	store, err := state.Open(s.file, opts)
	if err != nil {
		return nil, nil, err
	}
	h = &held{store: store}
	s.serve(h, req)
	if opts.FirstRun != nil && opts.FirstRun.ID != 0 {
		created = opts.FirstRun
	}
	if h.latest, err = store.LatestRun(); err != nil {
		h.close()
		return nil, nil, err
	}
	return h, created, nil
}

// load reads and plans path with the request's variables over base, the values a run
// recorded; warnings go to req.Warn, errors come back as a *FlowError.
func (s *Session) load(req *Request, path, dir string, base map[string]cty.Value, partial bool) (*Loaded, error) {
	l, flow, diags := plan.LoadIn(path, dir, s.reg, config.VarInputs{Base: base, Environ: req.Environ, Files: req.VarFiles,
		Vars: req.Vars, Partial: partial})
	if diags.HasErrors() {
		return nil, &FlowError{Flow: flow, Diags: diags}
	}
	if len(diags) > 0 && req.Warn != nil {
		req.Warn(flow, diags)
	}
	return l, nil
}

// selected is the part of l's plan req's targets select, its replace addresses checked.
func selected(l *Loaded, req *Request) (*Plan, error) {
	if err := l.Plan.CheckAddresses("--replace", req.Replace); err != nil {
		return nil, err
	}
	if len(req.Targets) == 0 {
		return l.Plan, nil
	}
	return l.Plan.Select(req.Targets)
}

func (req *Request) logger(redact func(string) string) hclog.Logger {
	if req.Logger == nil {
		return nil
	}
	return req.Logger(redact)
}

// refresh is how req's preview probes, in the state of lineage: as many at once as
// its walk runs tasks.
func (req *Request) refresh(lineage string) *ops.Refresh {
	return &ops.Refresh{Parallelism: req.Parallelism, Logger: req.logger(nil), Lineage: lineage}
}

// lineageOf is store's lineage id (tasks.Env.Lineage); a state that cannot say has
// none, and names derived from it are still unique per address.
func lineageOf(store *state.Store) string {
	id, _ := store.Identity()
	return id.Lineage
}
