package cli

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/flowdev/flow/engine"
)

// pluginDoc is one plugin executable a run used, in `flow status --json`: the plugin
// block's name, the absolute path and the hex sha256 of the executable, and the task
// types it served.
type pluginDoc struct {
	Name   string   `json:"name"`
	Path   string   `json:"path"`
	Sha256 string   `json:"sha256"`
	Types  []string `json:"types,omitempty"`
	// Instances are, in flow status, the instances whose latest attempt ran with this
	// executable (a resume with a changed plugin records both).
	Instances []string `json:"instances,omitempty"`
}

// pluginDocs are the plugins run recorded.
func pluginDocs(run *engine.RunRecord) []pluginDoc {
	var out []pluginDoc
	for _, p := range run.Plugins {
		out = append(out, pluginDoc{Name: p.Name, Path: p.Path, Sha256: p.Sha256, Types: p.Types})
	}
	return out
}

// pluginInstances fills in each plugin's Instances from recs: those whose latest
// attempt ran with its sha256.
func pluginInstances(docs []pluginDoc, recs []engine.InstanceRecord) {
	for i := range docs {
		for _, r := range recs {
			if r.Plugin != "" && r.Plugin == docs[i].Sha256 && slices.Contains(docs[i].Types, r.Type) {
				docs[i].Instances = append(docs[i].Instances, r.Address)
			}
		}
	}
}

// printPlugins writes one line per plugin under a "Plugins:" heading, nothing when the
// run used none.
func printPlugins(w io.Writer, heading string, docs []pluginDoc) {
	if len(docs) == 0 {
		return
	}
	fmt.Fprintln(w, heading)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, p := range docs {
		fmt.Fprintf(tw, "  %s\t%s\tsha256 %s\t%s\n", p.Name, p.Path, p.Sha256, strings.Join(p.Types, ", "))
		if len(p.Instances) > 0 {
			fmt.Fprintf(tw, "  \t  ran %s\t\t\n", strings.Join(p.Instances, ", "))
		}
	}
	tw.Flush()
}

// printRunPlugins follows the runs table with the plugins of each run that used any.
func printRunPlugins(w io.Writer, runs []*engine.RunRecord) {
	for _, r := range runs {
		printPlugins(w, fmt.Sprintf("Run %d used plugins:", r.ID), pluginDocs(r))
	}
}
