package cli

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/flowdev/flow/engine"
)

// count is n and noun, in the plural unless n is 1: "1 instance", "2 instances",
// "0 instances". A noun whose plural is not NOUN+"s" is in irregular.
func count(n int, noun string) string {
	return fmt.Sprintf("%d %s", n, plural(n, noun))
}

// plural is noun as n of it is said: noun for 1, else its plural.
func plural(n int, noun string) string {
	if n == 1 {
		return noun
	}
	if p, ok := irregular[noun]; ok {
		return p
	}
	return noun + "s"
}

// irregular holds the plurals count and plural cannot make by adding "s", including
// the phrases that agree with their count ("1 left as it is", "2 left as they are").
var irregular = map[string]string{
	"left as it is": "left as they are",
	"file is":       "files are",
}

// commandHint is a command line flow suggests, "flow NAME [FLAGS]" with its
// arguments (a flow path as the user gave it, or a placeholder such as ADDRESS),
// followed by what makes copying it act on the same state file: --state, unless the
// command finds the same file by itself ($FLOW_STATE; the one file in .flow; for run
// and plan the file named after their flow), and --flow when it was given, for the
// commands that take it.
func (c *CLI) commandHint(command string, args ...string) string {
	words := []string{command}
	for _, a := range args {
		if a == "PATH" || a == "ADDRESS" { // a placeholder, to fill in
			words = append(words, a)
			continue
		}
		words = append(words, shellQuote(a))
	}
	name := strings.Fields(command + " flow")[1]
	if state := c.hintState(name, args); state != "" {
		words = append(words, "--state", shellQuote(state))
	}
	if c.movedFlow != "" && (name == "resume" || name == "destroy" || strings.HasPrefix(command, "flow plan --destroy")) {
		words = append(words, "--flow", shellQuote(c.movedFlow))
	}
	return strings.Join(words, " ")
}

// hintState is the --state a suggested command name (with args) needs to act on the
// state file this one uses, or "" when it finds that file by itself.
func (c *CLI) hintState(name string, args []string) string {
	switch {
	case c.resolved == "" || c.stateFrom == stateEnv:
		return ""
	case c.stateFrom == stateFlag:
		return engine.ShowState(c.statePath)
	case flowArgCommands[name] && len(args) > 0:
		if defaultState(args[0]) == c.resolved {
			return ""
		}
		return c.resolved
	case c.stateFrom == stateFound:
		return ""
	}
	return c.resolved
}

// hintFlow is the flow path a suggested flow run names: the one the user gave to
// this command (run's PATH, resume's or destroy's --flow), else recorded, the run's.
func (c *CLI) hintFlow(recorded string) string {
	switch {
	case c.flowArg != "":
		return c.flowArg
	case c.movedFlow != "":
		return c.movedFlow
	}
	return displayPath(recorded)
}

// absPath is p made absolute against the caller's directory, or p.
func absPath(p string) string {
	if abs, err := filepath.Abs(p); err == nil {
		return abs
	}
	return p
}
