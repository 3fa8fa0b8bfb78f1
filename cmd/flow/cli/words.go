package cli

import (
	"fmt"
	"path/filepath"
	"strings"
)

// count is n and noun, in the plural unless n is 1: "1 instance", "2 instances".
func count(n int, noun string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, noun)
	}
	return fmt.Sprintf("%d %ss", n, noun)
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
