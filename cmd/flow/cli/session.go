package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/flowdev/flow/engine"
)

// request is what every walk's request holds: the variables, where events go, and how
// the CLI follows the walk.
func (c *CLI) request(v varFlags, out io.Writer, live bool) engine.Request {
	return engine.Request{VarFiles: v.files, Vars: v.vars, Environ: os.Environ(), Out: out, Live: live,
		Logger: func(redact func(string) string) hclog.Logger { return c.logger(redact) },
		Warn:   c.printDiags}
}

// observer follows a walk for the CLI: it prints and draws the walk as it starts.
type observer struct {
	cli         *CLI
	view        *liveView
	parallelism int
	began       time.Time
}

func (o *observer) Started(s engine.Start, w engine.Progress) {
	o.cli.printStart(s, o.parallelism)
	o.began = time.Now()
	o.view.start(w)
}

// printStart says what a walk begins.
func (c *CLI) printStart(s engine.Start, parallelism int) {
	run, flow := s.Run, displayPath(s.Run.Flow)
	switch s.Kind {
	case engine.NewDestroy, engine.ResumedDestroy:
		if s.FlowChanged {
			fmt.Fprintf(c.stdout, "The flow changed since run %d; each instance is destroyed as the files say now.\n", s.From)
		}
		verb := "Destroying"
		if s.Kind == engine.ResumedDestroy {
			verb = "Continuing to destroy"
		}
		fmt.Fprintf(c.stdout, "%s what run %d of %s created (destroy run %d)\n", verb, s.From, flow, run.ID)
		return
	case engine.ResumedRun:
		if s.FlowChanged {
			fmt.Fprintf(c.stdout, "The flow changed since run %d started; instances whose inputs changed run again.\n", run.ID)
		}
	}
	verb := map[engine.StartKind]string{engine.NewRun: "Starting", engine.ResumedRun: "Resuming",
		engine.FromCheckpoints: fmt.Sprintf("From the checkpoints of run %d, starting", s.From)}[s.Kind]
	fmt.Fprintf(c.stdout, "%s run %d of %s: %s, parallelism %d\n", verb, run.ID, flow, count(s.Instances, "task instance"), parallelism)
}

// refused maps why a session walked nothing to its message and exit code.
func (c *CLI) refused(err error) error {
	var (
		flowErr *engine.FlowError
		noRuns  *engine.NoRunsError
		unfin   *engine.UnfinishedError
		nothing *engine.NothingToDoError
		place   *engine.PlaceError
		other   *engine.OtherFlowError
		away    *engine.ElsewhereError
		unrec   *engine.UnrecordedError
	)
	switch {
	case errors.As(err, &flowErr):
		return c.reportDiags(flowErr.Flow, flowErr.Diags)
	case errors.As(err, &other):
		return failf(ExitInvalid, "the state file %s belongs to the flow %s (run %d), not %s: give this flow a state file of its own "+
			"(--state, or leave it out: the default is named after the flow), first destroy what the other created with %q, "+
			"or, if the project moved here with its files, take its instances over with %q",
			other.Path, displayPath(other.Holds), other.Run, displayPath(other.Flow), c.commandHint("flow destroy"), c.commandHint("flow run --move", displayPath(other.Flow)))
	case errors.As(err, &unrec):
		return failf(ExitInvalid, "refusing to destroy: %v; destroy with the run's values (leave out --var, --var-file and FLOW_VAR_*), or undo %s by hand",
			unrec, strings.Join(unrec.Addrs, ", "))
	case errors.As(err, &away):
		return failf(ExitInvalid, "the state file %s holds %s made in %s; a run here, in %s, would make them again and lose track of those: "+
			"run it from there, give this directory a state file of its own (--state), destroy what the state holds first with %q, "+
			"or, if the project moved here, take them along with %q",
			away.Path, count(away.Count, "instance"), strings.Join(away.Dirs, ", "), away.Here,
			c.commandHint("flow destroy"), c.commandHint("flow run --move", "PATH"))
	case errors.As(err, &place) && place.Moved:
		return failf(ExitInvalid, "%v", place)
	case errors.As(err, &place):
		again := "flow " + c.command
		if c.command == "plan" {
			again = "flow plan --destroy" // only a plan of a destroy reads the run's flow
		}
		return failf(ExitInvalid, "%v; if the flow moved, give its new place with --flow PATH, as in %q (its working directory is taken from there when the old one is gone)",
			place, c.commandHint(again)+" --flow PATH")
	case errors.As(err, &noRuns) && noRuns.Op == "resume":
		return failf(ExitInvalid, "nothing to resume in %s: there are no runs yet; start one with %q", noRuns.Path, c.commandHint("flow run", "PATH"))
	case errors.As(err, &noRuns) && noRuns.Op == "destroy":
		return failf(ExitInvalid, "nothing to destroy in %s: there are no runs", noRuns.Path)
	case errors.As(err, &noRuns):
		return failf(ExitInvalid, "no runs in %s yet", noRuns.Path)
	case errors.As(err, &unfin) && unfin.Latest.Destroys != 0:
		return failf(ExitInvalid, "the latest run (%d) destroys run %d and did not finish: it is %s; continue it with %q, or start a new run anyway with %q",
			unfin.Latest.ID, unfin.Latest.Destroys, unfin.Status, c.commandHint("flow destroy"), c.commandHint("flow run --new", c.hintFlow(unfin.Latest.Flow)))
	case errors.As(err, &unfin):
		return failf(ExitInvalid, "the latest run (%d, %s) did not finish: it is %s; continue it with %q or start over with %q",
			unfin.Latest.ID, unfin.Latest.Flow, unfin.Status, c.commandHint("flow resume"), c.commandHint("flow run --new", c.hintFlow(unfin.Latest.Flow)))
	case errors.As(err, &nothing):
		c.printNothing(nothing)
		return nil
	}
	return fail(ExitInvalid, err)
}

// printNothing says why a resume or a destroy has nothing to do.
func (c *CLI) printNothing(e *engine.NothingToDoError) {
	l := e.Latest
	switch {
	case e.Op == "destroy":
		fmt.Fprintf(c.stdout, "Nothing to destroy: run %d was destroyed by run %d.\n", l.Destroys, l.ID)
	case l.Destroys != 0:
		fmt.Fprintf(c.stdout, "Nothing to resume: the latest run (%d) destroyed run %d. Start a new one with %q.\n", l.ID, l.Destroys, c.commandHint("flow run", c.hintFlow(l.Flow)))
	case len(e.Drifted) > 0:
		fmt.Fprintf(c.stdout, "Nothing to resume: the latest run (%d) succeeded, but refresh found %s changed since:\n", l.ID, count(len(e.Drifted), "instance"))
		for _, d := range e.Drifted {
			fmt.Fprintf(c.stdout, "  %s: %s\n", d.Addr, d.Reason)
		}
		fmt.Fprintf(c.stdout, "A new run makes them again: %q.\n", c.commandHint("flow run", c.hintFlow(l.Flow)))
	default:
		fmt.Fprintf(c.stdout, "Nothing to resume: the latest run (%d) succeeded. Start a new one with %q.\n", l.ID, c.commandHint("flow run", c.hintFlow(l.Flow)))
	}
}
