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

// usedPlugins are the plugins a run that had recorded kept uses now that it loaded
// now: every executable a run used stays recorded (its instances name the sha256 they
// ran with, state.Instance.Plugin), a changed one is added after the one it replaces.
func usedPlugins(recorded, now []state.Plugin) []state.Plugin {
	out := slices.Clone(recorded)
	for _, p := range now {
		if !slices.ContainsFunc(out, func(r state.Plugin) bool {
			return r.Name == p.Name && r.Path == p.Path && r.Sha256 == p.Sha256
		}) {
			out = append(out, p)
		}
	}
	return out
}

// pluginOf is the sha256 of the plugin executable that serves typ in p's flow, "" for
// a built-in type.
func pluginOf(p *plan.Plan, typ string) string {
	if p == nil || p.Flow == nil {
		return ""
	}
	for _, use := range p.Flow.Plugins {
		if slices.Contains(use.Types, typ) {
			return use.Sha256
		}
	}
	return ""
}

// PluginChanges compares the plugins run recorded with those l loaded: a plugin whose
// executable moved or whose sha256 changed is a warning naming the instances that
// will run with the new executable (those of its types that have not succeeded).
func PluginChanges(run *state.Run, l *plan.Loaded, previous map[string]*state.Instance) hcl.Diagnostics {
	return pluginChanges(run.Plugins, l, "The resumed run uses the new executable for %s.",
		"no instance: every one of its instances succeeded",
		func(addr string) bool { rec := previous[addr]; return rec == nil || rec.Status != state.Succeeded })
}

// DestroyPluginChanges is PluginChanges for a destroy of target: the instances named
// are those target recorded that the destroy undoes with the new executable.
func DestroyPluginChanges(target *state.Run, l *plan.Loaded, created map[string]*state.Instance) hcl.Diagnostics {
	return pluginChanges(target.Plugins, l, "The destroy undoes %s with the new executable.",
		"nothing",
		func(addr string) bool { return created[addr] != nil })
}

func pluginChanges(recorded []state.Plugin, l *plan.Loaded, uses, none string, affects func(addr string) bool) hcl.Diagnostics {
	var diags hcl.Diagnostics
	before := map[string]state.Plugin{}
	for _, p := range recorded {
		before[p.Name] = p // the latest one a run used, when it used several
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
			if types[inst.Task.Type] && affects(addr) {
				affected = append(affected, addr)
			}
		}
		sort.Strings(affected)
		what := none
		if len(affected) > 0 {
			what = strings.Join(affected, ", ")
		}
		diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagWarning, Summary: "Plugin changed since the run started",
			Detail: fmt.Sprintf("Plugin %q was %s (sha256 %s) and is now %s (sha256 %s). "+uses,
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
