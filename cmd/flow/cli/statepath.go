package cli

import (
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/flowdev/flow/engine"
)

// stateDir holds the state files flow names by default, in the caller's directory.
const stateDir = ".flow"

// flowArgCommands take the flow's path as their argument; the default state file is
// named after it.
var flowArgCommands = map[string]bool{"run": true, "plan": true}

// stateCommands use a state file.
var stateCommands = map[string]bool{"run": true, "plan": true, "resume": true, "destroy": true,
	"status": true, "output": true, "runs": true, "logs": true, "ui": true, "lock": true, "migrate": true}

// resolveState picks the state file of cmd: --state, else $FLOW_STATE, else for a
// command given a flow .flow/NAME.db (NAME the flow file's name without .hcl, or its
// directory's), so two flows in one directory never share a state file; else the one
// state file in .flow, naming the choices when there are several.
func (c *CLI) resolveState(cmd *cobra.Command, args []string) error {
	c.command = cmd.Name()
	if flowArgCommands[cmd.Name()] && len(args) > 0 {
		c.flowArg = args[0]
	}
	switch {
	case !stateCommands[cmd.Name()]:
		return nil
	case c.statePath != "":
		c.resolved, c.stateFrom = c.statePath, stateFlag
	case os.Getenv("FLOW_STATE") != "":
		c.resolved, c.stateFrom = os.Getenv("FLOW_STATE"), stateEnv
	case c.flowArg != "":
		c.resolved, c.stateFrom = defaultState(c.flowArg), stateNamed
	default:
		c.stateFrom = stateFound
		found, _ := filepath.Glob(filepath.Join(stateDir, "*.db"))
		sort.Strings(found)
		switch len(found) {
		case 0:
			// A name for the engine to refuse with: nothing creates it (run and plan name
			// their file after the flow), so no message names it; see noStateHere.
			c.resolved, c.noneFound = filepath.Join(stateDir, "state.db"), true
		case 1:
			c.resolved = found[0]
		default:
			return failf(ExitInvalid, "%s holds the state files of several flows (%s): name one with --state",
				stateDir, strings.Join(found, ", "))
		}
	}
	return nil
}

// stateSource is where resolveState found the state file.
type stateSource int

const (
	stateFound stateSource = iota // the one file in .flow (or none yet)
	stateFlag                     // --state
	stateEnv                      // $FLOW_STATE
	stateNamed                    // .flow/NAME.db, named after the flow given to run or plan
)

// defaultState is the state file named after the flow at path: .flow/NAME.db.
func defaultState(path string) string {
	name := filepath.Base(filepath.Clean(absPath(path)))
	name = strings.TrimSuffix(name, ".hcl")
	if name == "" || name == "." || name == string(filepath.Separator) {
		name = "state"
	}
	return filepath.Join(stateDir, name+".db")
}

// noStateHere is err, or, when it is a missing state file that resolveState did not
// find in .flow, a message naming where flow looked and where a run keeps its state,
// not the placeholder path no command would create.
func (c *CLI) noStateHere(err error) error {
	if !c.noneFound || !errors.As(err, new(*engine.NoStateError)) {
		return err
	}
	return failf(ExitInvalid, "no state file %s: nothing has run here yet (flow run FLOW keeps its state in %s; name another with --state or $FLOW_STATE)",
		c.whereNoState(""), filepath.Join(stateDir, "NAME.db"))
}

// whereNoState says where the missing state file path was looked for: "at PATH", or,
// when resolveState found none in .flow, "in DIR/.flow" (PATH is then a name no
// command creates).
func (c *CLI) whereNoState(path string) string {
	if c.noneFound {
		return "in " + filepath.Join(absPath("."), stateDir)
	}
	return "at " + path
}
