package cli

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/signal"
	"slices"
	"sort"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/flowdev/flow/cmd/flow/ui"
	"github.com/flowdev/flow/engine"
	"github.com/flowdev/flow/engine/live"
)

func (c *CLI) uiCmd() *cobra.Command {
	var listen string
	cmd := &cobra.Command{
		Use:   "ui",
		Short: "Serve a read-only web page of the runs: live graph, timeline, history",
		Long: `Serve a read-only web page of the state file's runs: the graph of a run with every
instance coloured by its state (updated as a run goes on, from the flow process running
it), a timeline with the critical path and the slowest instances, and the history of
every run with each task's duration across runs. A past run is drawn with the graph
recorded for that run. Everything the page needs is inside flow: no network is used.

It listens on 127.0.0.1 only unless --listen names another address; sensitive values are
never sent (output is redacted as in logs, and no task inputs or outputs are shown).`,
		Example: `  flow ui                                   # then open http://127.0.0.1:8470/
  flow ui --state .flow/k8s-lab.db --listen 127.0.0.1:9000
  ssh -L 8470:127.0.0.1:8470 lab-host       # to look from another machine`,
		Args: exactArgs(0, ""),
		RunE: func(cmd *cobra.Command, args []string) error {
			ln, err := ui.Listen(listen)
			if err != nil {
				return failf(ExitInvalid, "%v", err)
			}
			if tcp, ok := ln.Addr().(*net.TCPAddr); ok && !tcp.IP.IsLoopback() {
				fmt.Fprintf(c.stderr, "flow ui: %s is not a loopback address: whoever reaches it sees the runs\n", ln.Addr())
			}
			fmt.Fprintf(c.stdout, "flow ui: serving %s on http://%s/ (Ctrl-C stops)\n", displayPath(c.state()), ln.Addr())
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return ui.New(newUISource(c.state(), engine.NewSession(c.state(), c.reg))).Serve(ctx, ln)
		},
	}
	cmd.Flags().StringVar(&listen, "listen", ui.DefaultListen, "address to serve on, HOST:PORT (port 0: any free one)")
	return cmd
}

// uiSource reads for flow ui: the state file, or while a walk holds it, the walk's
// process (as flow status does). What it read from the file is kept until the file
// changes, so an open page costs a stat while nothing runs.
type uiSource struct {
	path string
	sess *engine.Session

	mu    sync.Mutex
	busy  bool // the last read found the file held: ask the process first
	stamp fileStamp
	cache map[uint64]*ui.Detail
	runs  []ui.Run // read at stamp, nil when not yet
}

type fileStamp struct {
	mod  time.Time
	size int64
}

func newUISource(path string, sess *engine.Session) *uiSource {
	return &uiSource{path: path, sess: sess, cache: map[uint64]*ui.Detail{}}
}

// read runs fromFile, or while a walk holds the file fromProcess.
func (s *uiSource) read(fromFile, fromProcess func() error) error {
	s.mu.Lock()
	busy := s.busy
	s.mu.Unlock()
	if busy {
		err := fromProcess()
		if !errors.Is(err, live.ErrNotServing) {
			return err
		}
	}
	err := fromFile()
	if errors.As(err, new(*engine.BusyError)) {
		err = retryLive(fromProcess)
		busy = true
	} else {
		busy = false
	}
	s.mu.Lock()
	s.busy = busy
	s.mu.Unlock()
	return err
}

// cached is run id's detail read from the file, while the file is unchanged.
func (s *uiSource) cached(id uint64) (*ui.Detail, fileStamp) {
	st, err := os.Stat(s.path)
	if err != nil {
		return nil, fileStamp{}
	}
	now := fileStamp{st.ModTime(), st.Size()}
	s.mu.Lock()
	defer s.mu.Unlock()
	if now != s.stamp {
		s.cache, s.runs, s.stamp = map[uint64]*ui.Detail{}, nil, now
	}
	return s.cache[id], now
}

// cachedRuns is the list of runs read from the file, while the file is unchanged.
func (s *uiSource) cachedRuns() ([]ui.Run, fileStamp) {
	_, now := s.cached(0)
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.runs, now
}

func (s *uiSource) keep(id uint64, d *ui.Detail, at fileStamp) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if at == s.stamp {
		s.cache[id] = d
	}
}

// Runs reads the file only when it changed: each read takes the file's shared lock
// for a moment, and a flow run starting just then would find the file in use.
func (s *uiSource) Runs() ([]ui.Run, error) {
	var out []ui.Run
	convert := func(runs []*engine.RunRecord) {
		out = make([]ui.Run, len(runs))
		for i, r := range runs {
			out[i] = uiRun(r, r.Status)
		}
	}
	err := s.read(func() error {
		hit, at := s.cachedRuns()
		if hit != nil {
			out = hit
			return nil
		}
		runs, err := s.sess.Runs()
		if err != nil {
			return err
		}
		convert(runs)
		s.mu.Lock()
		if at == s.stamp {
			s.runs = out
		}
		s.mu.Unlock()
		return nil
	}, func() error {
		var runs []*engine.RunRecord
		if err := live.Runs(s.path, &runs); err != nil {
			return err
		}
		convert(runs)
		return nil
	})
	return out, uiError(err)
}

func (s *uiSource) Detail(id uint64) (*ui.Detail, error) {
	var d *ui.Detail
	err := s.read(func() error {
		hit, at := s.cached(id)
		if hit != nil {
			d = hit
			return nil
		}
		run, recs, err := s.sess.Status(id)
		if err != nil {
			return err
		}
		d = uiDetail(run, run.Status, recs, false)
		s.keep(id, d, at)
		return nil
	}, func() error { d = &ui.Detail{}; return live.Records(s.path, id, d) })
	if err != nil {
		return nil, uiError(err)
	}
	return d, nil
}

func (s *uiSource) Log(id uint64, addr string) ([]byte, error) {
	var out []byte
	err := s.read(func() (err error) { out, err = s.sess.Log(id, addr); return err },
		func() (err error) { out, err = live.Log(s.path, id, addr); return err })
	return out, uiError(err)
}

// uiError says what the page shows instead of a run.
func uiError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.As(err, new(*engine.NoStateError)), errors.As(err, new(*engine.NoRunsError)):
		return fmt.Errorf("%w; the page shows a run as soon as one starts", err)
	case errors.Is(err, live.ErrAnswer):
		return errors.New(err.Error()[len(live.ErrAnswer.Error())+2:])
	}
	return err
}

// Records answers flow ui from another process while the walk holds the state file.
func (s *liveSource) Records(runID uint64) (any, error) {
	reader, run, runner := s.state()
	switch {
	case current(runID, run) && runner == nil:
		return &ui.Detail{Run: ui.Run{Kind: "run", Status: string(engine.Running)}, Instances: []ui.Instance{}, Live: true}, nil
	case current(runID, run):
		return uiDetail(run, engine.Running, runner.Snapshot(), true), nil
	}
	rec, recs, err := reader.Status(runID)
	if err != nil {
		return nil, err
	}
	return uiDetail(rec, rec.Status, recs, false), nil
}

func uiRun(r *engine.RunRecord, status engine.Status) ui.Run {
	kind := "run"
	if r.Destroys != 0 {
		kind = "destroy"
	}
	return ui.Run{ID: r.ID, Flow: r.Flow, Kind: kind, Status: string(status), StartedAt: r.StartedAt,
		FinishedAt: r.FinishedAt, Resumes: r.Resumes, Destroys: r.Destroys, Error: r.Error}
}

// uiDetail is what the page shows of a run: no outputs, inputs or variables.
func uiDetail(run *engine.RunRecord, status engine.Status, recs []engine.InstanceRecord, live bool) *ui.Detail {
	recs = slices.Clone(recs)
	sort.SliceStable(recs, func(i, j int) bool { return recs[i].Order < recs[j].Order })
	d := &ui.Detail{Run: uiRun(run, status), Instances: make([]ui.Instance, len(recs)), Live: live}
	for i, r := range recs {
		d.Instances[i] = ui.Instance{Address: r.Address, Type: r.Type, Status: string(r.Status), Attempts: r.Attempts,
			StartedAt: r.StartedAt, FinishedAt: r.FinishedAt, Error: r.Error, Reason: r.Reason, Fingerprint: r.Fingerprint,
			Deps: r.Deps, DepsKnown: r.DepsKnown, Order: r.Order, Removed: r.Removed}
	}
	return d
}
