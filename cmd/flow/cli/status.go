package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sort"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/flowdev/flow/engine"
)

// statusDoc is the `flow status --json` contract.
type statusDoc struct {
	RunID   uint64               `json:"run_id"`
	Flow    string               `json:"flow"`
	Status  string               `json:"status"`
	Tasks   []taskDoc            `json:"tasks"`
	Outputs map[string]outputDoc `json:"outputs"`
	// Destroys is, for a run of flow destroy, the run it undoes.
	Destroys uint64 `json:"destroys,omitempty"`
	// Plugins are the plugin executables the run used (plugins_show.go).
	Plugins []pluginDoc `json:"plugins,omitempty"`
}

// outputDoc is one flow output in `flow status --json` and `flow output --json`: its
// value and type in cty's JSON encoding; a sensitive one has neither.
type outputDoc struct {
	Value     json.RawMessage `json:"value"`
	Type      json.RawMessage `json:"type"`
	Sensitive bool            `json:"sensitive"`
}

type taskDoc struct {
	Address    string     `json:"address"`
	Status     string     `json:"status"`
	Attempts   int        `json:"attempts"`
	StartedAt  *time.Time `json:"started_at"`
	FinishedAt *time.Time `json:"finished_at"`
	Error      string     `json:"error"`
	// PendingUndo counts the objects the instance made before whose undo has not
	// succeeded yet (deposed): the next run or destroy undoes them.
	PendingUndo int `json:"pending_undo,omitempty"`
}

func newStatusDoc(run *engine.RunRecord, status string, recs []engine.InstanceRecord) statusDoc {
	doc := statusDoc{RunID: run.ID, Flow: run.Flow, Status: status, Tasks: []taskDoc{}, Outputs: map[string]outputDoc{},
		Destroys: run.Destroys, Plugins: pluginDocs(run)}
	pluginInstances(doc.Plugins, recs)
	for name, v := range run.Outputs {
		doc.Outputs[name] = outputDoc{Value: v.Value, Type: v.Type}
	}
	for _, name := range run.SensitiveOutputs {
		doc.Outputs[name] = outputDoc{Value: json.RawMessage("null"), Type: json.RawMessage("null"), Sensitive: true}
	}
	// Plan order, as the run recorded it; records from before it did tie and fall
	// back to address order.
	recs = slices.Clone(recs)
	sort.SliceStable(recs, func(i, j int) bool { return recs[i].Order < recs[j].Order })
	for _, r := range recs {
		doc.Tasks = append(doc.Tasks, taskDoc{Address: r.Address, Status: string(r.Status), Attempts: r.Attempts,
			StartedAt: r.StartedAt, FinishedAt: r.FinishedAt, Error: r.Error, PendingUndo: len(r.Deposed)})
	}
	return doc
}

func (c *CLI) statusCmd() *cobra.Command {
	var asJSON bool
	var runID uint64
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show the latest run and the state of each task instance",
		Long: `Show the latest run (or --run N) and every task instance's status: pending, running,
succeeded, failed, skipped or interrupted. It works from a second terminal while a run
is in progress: the running flow process answers then.`,
		Example: `  flow status
  flow status --json | jq '.tasks[] | select(.status=="failed")'
  flow status --run 3`,
		Args: exactArgs(0, ""),
		RunE: func(cmd *cobra.Command, args []string) error {
			doc, err := c.loadStatus(runID)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(c.stdout, doc)
			}
			printStatus(c.stdout, doc)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object")
	cmd.Flags().Uint64Var(&runID, "run", 0, "show this run instead of the latest")
	return cmd
}

// loadStatus reads run runID (0: the latest) from the state file or, while a walk
// holds it, from the walk's process.
func (c *CLI) loadStatus(runID uint64) (statusDoc, error) {
	run, recs, err := engine.NewSession(c.state(), c.reg).Status(runID)
	if err != nil {
		return statusDoc{}, c.refused(err)
	}
	return newStatusDoc(run, string(run.Status), recs), nil
}

func printStatus(w io.Writer, doc statusDoc) {
	if doc.Destroys != 0 {
		fmt.Fprintf(w, "Run %d, destroying run %d: %s (%s)\n", doc.RunID, doc.Destroys, doc.Status, displayPath(doc.Flow))
	} else {
		fmt.Fprintf(w, "Run %d: %s (%s)\n", doc.RunID, doc.Status, displayPath(doc.Flow))
	}
	counts := map[string]int{}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, t := range doc.Tasks {
		counts[t.Status]++
		detail := t.Error
		if t.Status == string(engine.Running) && t.StartedAt != nil {
			detail = fmt.Sprintf("for %s", time.Since(*t.StartedAt).Round(time.Second))
		}
		if t.PendingUndo > 0 {
			detail = fmt.Sprintf("(pending undo of %s) %s", count(t.PendingUndo, "object"), firstLine(detail))
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", t.Status, t.Address, firstLine(detail))
	}
	tw.Flush()
	fmt.Fprintf(w, "%s:", count(len(doc.Tasks), "instance"))
	for _, s := range []engine.Status{engine.Succeeded, engine.Removed, engine.Running, engine.Failed, engine.Skipped, engine.Interrupted, engine.Pending} {
		if n := counts[string(s)]; n > 0 {
			fmt.Fprintf(w, " %d %s", n, s)
		}
	}
	fmt.Fprintln(w)
	printPlugins(w, "Plugins:", doc.Plugins)
}

func firstLine(s string) string {
	for i, r := range s {
		if r == '\n' {
			return s[:i] + " ..."
		}
	}
	return s
}
