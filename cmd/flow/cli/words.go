package cli

import (
	"fmt"
	"path/filepath"
	"strings"
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

// commandHint is command with the --state and --flow the user gave, so what it
// suggests acts on the same state file.
func (c *CLI) commandHint(command string) string {
	args := []string{command}
	if c.statePath != "" {
		args = append(args, "--state", shellQuote(c.statePath))
	}
	if c.movedFlow != "" {
		args = append(args, "--flow", shellQuote(c.movedFlow))
	}
	return strings.Join(args, " ")
}

// absPath is p made absolute against the caller's directory, or p.
func absPath(p string) string {
	if abs, err := filepath.Abs(p); err == nil {
		return abs
	}
	return p
}
