package ops

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"

	"github.com/flowdev/flow/engine/config"
	"github.com/flowdev/flow/engine/plan"
	"github.com/flowdev/flow/engine/state"
)

// pluginRecords are the plugins flow loaded, as a run records them.
func pluginRecords(f *config.Flow) []state.Plugin { return slices.Clone(f.Plugins) }

// PluginChanges compares the plugins run recorded with those l loaded: a plugin whose
// executable moved or whose sha256 changed is a warning naming the instances that
// will run with the new executable (those of its types that have not succeeded).
func PluginChanges(run *state.Run, l *plan.Loaded, previous map[string]*state.Instance) hcl.Diagnostics {
	var diags hcl.Diagnostics
	before := map[string]state.Plugin{}
	for _, p := range run.Plugins {
		before[p.Name] = p
	}
	for _, now := range pluginRecords(l.Flow) {
		was, ok := before[now.Name]
		if !ok || (was.Path == now.Path && was.Sha256 == now.Sha256) {
			continue
		}
		types := map[string]bool{}
		for _, t := range now.Types {
			types[t] = true
		}
		var affected []string
		for addr, inst := range l.Plan.Instances {
			if rec := previous[addr]; types[inst.Task.Type] && (rec == nil || rec.Status != state.Succeeded) {
				affected = append(affected, addr)
			}
		}
		sort.Strings(affected)
		what := "no instance: every one of its instances succeeded"
		if len(affected) > 0 {
			what = strings.Join(affected, ", ")
		}
		diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagWarning, Summary: "Plugin changed since the run started",
			Detail: fmt.Sprintf("Plugin %q was %s (sha256 %s) and is now %s (sha256 %s). The resumed run uses the new executable for %s.",
				now.Name, was.Path, short(was.Sha256), now.Path, short(now.Sha256), what)})
	}
	return diags
}

func short(sum string) string {
	if len(sum) > 12 {
		return sum[:12]
	}
	return sum
}
