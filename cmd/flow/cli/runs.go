package cli

import (
	"fmt"
	"io"
	"sort"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/flowdev/flow/engine"
)

// runDoc is a run as flow runs --json prints it; its field names are a contract
// (docs/cli.md).
type runDoc struct {
	ID         uint64      `json:"id"`
	Status     string      `json:"status"`
	Flow       string      `json:"flow"`
	Dir        string      `json:"dir"`
	StartedAt  time.Time   `json:"started_at"`
	FinishedAt *time.Time  `json:"finished_at"`
	Resumes    int         `json:"resumes"`
	Destroys   uint64      `json:"destroys"`
	Error      string      `json:"error"`
	Plugins    []pluginDoc `json:"plugins"`
}

func (c *CLI) runsCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:     "runs",
		Short:   "List the runs recorded in the state file",
		Example: "  flow runs\n  flow runs --state /var/lib/flow/lab.db\n  flow runs --json | jq -r '.[] | select(.status == \"failed\") | .id'",
		Args:    exactArgs(0, ""),
		RunE: func(cmd *cobra.Command, args []string) error {
			runs, err := engine.NewSession(c.state(), c.reg).Runs()
			if err != nil {
				return c.refused(err)
			}
			if asJSON {
				docs := []runDoc{}
				for _, r := range runs {
					var finished *time.Time
					if r.FinishedAt != nil {
						t := r.FinishedAt.UTC()
						finished = &t
					}
					plugins := pluginDocs(r)
					if plugins == nil {
						plugins = []pluginDoc{}
					}
					docs = append(docs, runDoc{ID: r.ID, Status: string(r.Status), Flow: r.Flow, Dir: r.Dir,
						StartedAt: r.StartedAt.UTC(), FinishedAt: finished, Resumes: r.Resumes,
						Destroys: r.Destroys, Error: r.Error, Plugins: plugins})
				}
				return writeJSON(c.stdout, docs)
			}
			tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "RUN\tSTATUS\tSTARTED\tDURATION\tRESUMES\tFLOW")
			for _, r := range runs {
				dur := "-"
				if r.FinishedAt != nil {
					dur = r.FinishedAt.Sub(r.StartedAt).Round(10 * time.Millisecond).String()
				}
				flow := displayPath(r.Flow)
				if r.Destroys != 0 {
					flow = fmt.Sprintf("destroy of run %d: %s", r.Destroys, flow)
				}
				fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%d\t%s\n", r.ID, r.Status,
					r.StartedAt.Local().Format("2006-01-02 15:04:05"), dur, r.Resumes, flow)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			printRunPlugins(c.stdout, runs)
			if pending, err := engine.NewSession(c.state(), c.reg).PendingUndos(); err == nil && len(pending) > 0 {
				printPending(c.stdout, pending)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON array of the runs, oldest first (fields: docs/cli.md)")
	return cmd
}

// printPending names the instances with pending undos (old objects the next run or
// destroy undoes first), a line each.
func printPending(w io.Writer, pending map[string]int) {
	addrs := make([]string, 0, len(pending))
	for addr := range pending {
		addrs = append(addrs, addr)
	}
	sort.Strings(addrs)
	fmt.Fprintln(w, "Pending undos (the next run of each, or flow destroy, undoes them first):")
	for _, addr := range addrs {
		fmt.Fprintf(w, "  %s: %s\n", addr, count(pending[addr], "object"))
	}
}
