package cli

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/spf13/cobra"

	"github.com/flowdev/flow/engine"
)

func (c *CLI) logsCmd() *cobra.Command {
	var runID uint64
	cmd := &cobra.Command{
		Use:   "logs ADDRESS",
		Short: "Print the captured output of one task instance",
		Long: `Print what one task instance wrote to stdout and stderr in the latest run (or --run N),
secrets redacted. While a run is in progress it prints the output captured so far.`,
		Example: `  flow logs 'exec.build["member1"]'
  flow logs exec.prepare --run 2`,
		Args: exactArgs(1, "ADDRESS"),
		RunE: func(cmd *cobra.Command, args []string) error {
			out, err := c.readLog(args[0], runID)
			if err != nil {
				return err
			}
			_, err = c.stdout.Write(out)
			return err
		},
	}
	cmd.Flags().Uint64Var(&runID, "run", 0, "read this run instead of the latest")
	return cmd
}

// normalizeAddress accepts keys without quotes, as shells tend to leave them:
// TYPE.NAME[KEY] and module.NAME[KEY].TYPE.NAME[KEY].
func normalizeAddress(addr string) string {
	return unquotedKey.ReplaceAllStringFunc(addr, func(k string) string {
		return fmt.Sprintf("[%q]", k[1:len(k)-1])
	})
}

var unquotedKey = regexp.MustCompile(`\[[^"\]]+\]`)

func (c *CLI) readLog(addr string, runID uint64) ([]byte, error) {
	addr = normalizeAddress(addr)
	out, err := engine.NewSession(c.state(), c.reg).Log(runID, addr)
	if err != nil {
		return nil, c.keyMissing(addr, runID, c.refused(err))
	}
	return out, nil
}

// keyMissing is err, or, when addr names a task with keys without one, an error
// listing its instances.
func (c *CLI) keyMissing(addr string, runID uint64, err error) error {
	keys := c.instancesOf(addr, runID)
	if len(keys) == 0 {
		return err
	}
	return failf(ExitInvalid, "%s has one instance per key; name one: %s (e.g. %s)",
		addr, strings.Join(keys, ", "), c.commandHint("flow logs", keys[0]))
}

// instancesOf is the addresses of the instances of the task addr (TYPE.NAME, no key)
// in the run, when it has keys; nil when it is one instance or there is no such task.
func (c *CLI) instancesOf(addr string, runID uint64) []string {
	if strings.HasSuffix(addr, "]") {
		return nil
	}
	doc, err := c.loadStatus(runID)
	if err != nil {
		return nil
	}
	var keys []string
	for _, t := range doc.Tasks {
		if strings.HasPrefix(t.Address, addr+"[") {
			keys = append(keys, t.Address)
		}
	}
	return keys
}
