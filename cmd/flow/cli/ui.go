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

It listens on 127.0.0.1 only unless --listen names another address; then the URL it
prints carries a token, which the page keeps in a cookie, and a request without it is
refused. Sensitive values are never sent (output is redacted as in logs, and no task
inputs or outputs are shown).`,
		Example: `  flow ui                                   # then open http://127.0.0.1:8470/
  flow ui --state .flow/k8s-lab.db --listen 127.0.0.1:9000
  ssh -L 8470:127.0.0.1:8470 lab-host       # to look from another machine`,
		Args: exactArgs(0, ""),
		RunE: func(cmd *cobra.Command, args []string) error {
			ln, err := ui.Listen(listen)
			if err != nil {
				return failf(ExitInvalid, "%v", err)
			}
			srv := ui.New(newUISource(c.state(), engine.NewSession(c.state(), c.reg)))
			host, _, _ := net.SplitHostPort(listen)
			url, err := srv.Secure(ln, host)
			if err != nil {
				ln.Close()
				return failf(ExitInvalid, "%v", err)
			}
			if srv.Token != "" {
				fmt.Fprintf(c.stderr, "flow ui: %s is not a loopback address: the page asks for the token in this URL (keep it to yourself)\n", ln.Addr())
			}
			fmt.Fprintf(c.stdout, "flow ui: serving %s on %s (Ctrl-C stops)\n", displayPath(c.state()), url)
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return srv.Serve(ctx, ln)
		},
	}
	cmd.Flags().StringVar(&listen, "listen", ui.DefaultListen, "address to serve on, HOST:PORT (port 0: any free one)")
	return cmd
}

// uiSource reads for flow ui through the session: the state file, or while a walk
// holds it, the walk's process (as flow status does). What it read of finished runs is
// kept until the file changes, so an open page costs a stat while nothing runs.
type uiSource struct {
	path string
	sess *engine.Session

	mu    sync.Mutex
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

// cached is run id's detail read while the file is as it is now.
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

// cachedRuns is the list of runs read while the file is as it is now.
func (s *uiSource) cachedRuns() ([]ui.Run, fileStamp) {
	_, now := s.cached(0)
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.runs, now
}

// keep keeps what was read at stamp at, unless it shows a run in progress, which
// changes without the file changing.
func (s *uiSource) keep(at fileStamp, live bool, f func()) {
	if live {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if at == s.stamp {
		f()
	}
}

// Runs reads the runs only when the file changed, or while one is in progress.
func (s *uiSource) Runs() ([]ui.Run, error) {
	hit, at := s.cachedRuns()
	if hit != nil {
		return hit, nil
	}
	runs, err := s.sess.Runs()
	if err != nil {
		return nil, uiError(err)
	}
	out := make([]ui.Run, len(runs))
	live := false
	for i, r := range runs {
		out[i] = uiRun(r, r.Status)
		live = live || r.Status == engine.Running
	}
	s.keep(at, live, func() { s.runs = out })
	return out, nil
}

func (s *uiSource) Detail(id uint64) (*ui.Detail, error) {
	hit, at := s.cached(id)
	if hit != nil {
		return hit, nil
	}
	run, recs, err := s.sess.Status(id)
	if err != nil {
		return nil, uiError(err)
	}
	d := uiDetail(run, run.Status, recs, run.Status == engine.Running)
	s.keep(at, d.Live, func() { s.cache[id] = d })
	return d, nil
}

func (s *uiSource) Log(id uint64, addr string) ([]byte, error) {
	out, err := s.sess.Log(id, addr)
	return out, uiError(err)
}

// uiError says what the page shows instead of a run.
func uiError(err error) error {
	if errors.As(err, new(*engine.NoStateError)) || errors.As(err, new(*engine.NoRunsError)) {
		return fmt.Errorf("%w; the page shows a run as soon as one starts", err)
	}
	return err
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
			Deps: r.Deps, DepsKnown: r.DepsKnown, Order: r.Order, Removed: r.Removed, PendingUndo: len(r.Deposed)}
		for _, t := range r.Tries {
			d.Instances[i].Tries = append(d.Instances[i].Tries, ui.Try{StartedAt: t.StartedAt, FinishedAt: t.FinishedAt, Error: t.Error})
		}
	}
	return d
}
