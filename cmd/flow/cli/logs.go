package cli

import (
	"errors"
	"fmt"
	"regexp"

	"github.com/spf13/cobra"

	"github.com/flowdev/flow/engine"
	"github.com/flowdev/flow/engine/live"
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
	if errors.As(err, new(*engine.BusyError)) {
		err := retryLive(func() (err error) { out, err = live.Log(c.state(), runID, addr); return err })
		if err != nil {
			return nil, c.liveFailed(err)
		}
		return out, nil
	}
	if err != nil {
		return nil, c.refused(err)
	}
	return out, nil
}
