// Package cli owns flow's command line: commands, flags, exit codes, and how results
// are printed. It does not own loading, planning or running (engine does) nor the
// task types (main builds the registry and passes it in).
package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"slices"
	"strings"

	"github.com/hashicorp/go-hclog"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/flowdev/flow/tasks"
)

// Exit codes are part of the contract.
const (
	ExitOK          = 0
	ExitTaskFailed  = 1
	ExitInvalid     = 2
	ExitInterrupted = 130
)

// exitError carries an exit code; reported means the message was already printed.
type exitError struct {
	code     int
	err      error
	reported bool
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func fail(code int, err error) error { return &exitError{code: code, err: err} }
func failf(code int, format string, args ...any) error {
	return fail(code, fmt.Errorf(format, args...))
}
func reported(code int, err error) error { return &exitError{code: code, err: err, reported: true} }

// ExitCode maps an error from Execute to the process exit code.
func ExitCode(err error) int {
	if err == nil {
		return ExitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	return ExitInvalid // cobra's own errors are usage errors
}

// Reported tells main whether the error's message was already printed.
func Reported(err error) bool {
	var ee *exitError
	return errors.As(err, &ee) && ee.reported
}

// CLI is one invocation's context.
type CLI struct {
	reg    *tasks.Registry
	stdout io.Writer
	stderr io.Writer
	root   *cobra.Command

	statePath string
	logLevel  string
	logJSON   bool
	// resolved is the state file: see resolveState; stateFrom says where it came from,
	// command is the command's name and flowArg the flow path given to run or plan.
	resolved  string
	stateFrom stateSource
	// noneFound: .flow holds no state file, and resolved is a name no run creates.
	noneFound bool
	command   string
	flowArg   string
	// movedFlow is resume's, destroy's and plan --destroy's --flow: where the run's
	// flow is now.
	movedFlow string
	// stdin answers destroy's question when stdinTerminal says a person can.
	stdin         io.Reader
	stdinTerminal bool
}

// New builds the command tree over reg.
func New(reg *tasks.Registry, stdout, stderr io.Writer) *CLI {
	c := &CLI{reg: reg, stdout: stdout, stderr: stderr, stdin: os.Stdin,
		stdinTerminal: term.IsTerminal(int(os.Stdin.Fd()))}
	root := &cobra.Command{
		Use:   "flow",
		Short: "Run typed task graphs from HCL, with checkpoints and resume",
		Long: `flow runs the tasks declared in a flow file (HCL) as a dependency graph, in parallel,
and checkpoints every finished task instance, so an interrupted or failed run continues
with "flow resume" without redoing what succeeded.`,
		Example: `  flow validate flows/demo.hcl
  flow run flows/demo.hcl --var members='["a","b"]'
  flow status            # from a second terminal while it runs
  flow resume            # after Ctrl-C or a failure`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.PersistentFlags().StringVar(&c.statePath, "state", "", "state file or postgres:// URL (default $FLOW_STATE, else .flow/NAME.db for a flow NAME.hcl or directory NAME)")
	root.PersistentPreRunE = func(cmd *cobra.Command, args []string) error {
		if err := c.checkLogLevel(cmd); err != nil {
			return err
		}
		// The plugin host logs at flow's level: at debug, the plugins' stderr lines.
		if l, ok := c.reg.PluginLoader().(interface{ SetLogLevel(string) }); ok {
			l.SetLogLevel(strings.ToLower(c.logLevel))
		}
		return c.resolveState(cmd, args)
	}
	root.PersistentFlags().StringVar(&c.logLevel, "log-level", "warn", "log level: trace, debug, info, warn, error")
	root.PersistentFlags().BoolVar(&c.logJSON, "log-json", false, "write flow's own logs as JSON")
	// --version prints what `flow version` does.
	root.Version = versionText()
	root.SetVersionTemplate("{{.Version}}")
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return fail(ExitInvalid, fmt.Errorf("%w (see %s --help)", err, cmd.CommandPath()))
	})
	root.AddCommand(c.runCmd(), c.resumeCmd(), c.statusCmd(), c.planCmd(), c.graphCmd(),
		c.validateCmd(), c.fmtCmd(), c.runsCmd(), c.logsCmd(), c.outputCmd(), c.destroyCmd(), c.tasksCmd(), c.versionCmd(), c.pluginsCmd(), c.uiCmd())
	root.AddCommand(c.stateCmd())
	c.root = root
	return c
}

// Execute runs the command line args. FLOW_CPUPROFILE=FILE writes a CPU profile, for
// the benchmarks in docs/performance.md.
func (c *CLI) Execute(args []string) error {
	if path := os.Getenv("FLOW_CPUPROFILE"); path != "" {
		if f, err := os.Create(path); err == nil {
			defer f.Close()
			if pprof.StartCPUProfile(f) == nil {
				defer pprof.StopCPUProfile()
			}
		}
	}
	c.root.SetArgs(args)
	return c.noStateHere(c.root.Execute())
}

// logLevels are --log-level's values, as hclog names them.
var logLevels = []string{"trace", "debug", "info", "warn", "error"}

// checkLogLevel refuses a --log-level hclog does not know: it would log at its
// default level without a word.
func (c *CLI) checkLogLevel(cmd *cobra.Command) error {
	if slices.Contains(logLevels, strings.ToLower(c.logLevel)) {
		return nil
	}
	return failf(ExitInvalid, "--log-level %q: want one of %s (see %s --help)", c.logLevel, strings.Join(logLevels, ", "), cmd.CommandPath())
}

// state is the state file the command uses, as resolveState chose it.
func (c *CLI) state() string { return c.resolved }

// logger writes flow's own logs to stderr. With redact set, every line passes through
// it first, so a debug log of a command line never shows a sensitive value.
func (c *CLI) logger(redact func(string) string) hclog.Logger {
	out := c.stderr
	if redact != nil {
		out = redactingWriter{out: c.stderr, redact: redact}
	}
	return hclog.New(&hclog.LoggerOptions{
		Name: "flow", Level: hclog.LevelFromString(c.logLevel), Output: out, JSONFormat: c.logJSON,
	})
}

// redactingWriter redacts each write; hclog writes one whole entry per call.
type redactingWriter struct {
	out    io.Writer
	redact func(string) string
}

func (w redactingWriter) Write(p []byte) (int, error) {
	if _, err := io.WriteString(w.out, w.redact(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}
