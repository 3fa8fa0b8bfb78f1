package cli

import (
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spf13/cobra"
)

// stateDir holds the state files flow names by default, in the caller's directory.
const stateDir = ".flow"

// flowArgCommands take the flow's path as their argument; the default state file is
// named after it.
var flowArgCommands = map[string]bool{"run": true, "plan": true}

// stateCommands use a state file.
var stateCommands = map[string]bool{"run": true, "plan": true, "resume": true, "destroy": true,
	"status": true, "output": true, "runs": true, "logs": true, "lock": true, "migrate": true}

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
			c.resolved = filepath.Join(stateDir, "state.db")
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
