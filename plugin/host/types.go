package host

import (
	"context"
	"fmt"
	"time"

	"github.com/flowdev/flow/plugin"
	pluginpb "github.com/flowdev/flow/plugin/sdk/proto"
	"github.com/flowdev/flow/tasks"
)

// remoteType is one type a plugin serves, as its schema describes it.
type remoteType struct {
	proc    *Process
	name    string
	attrs   []tasks.Attribute
	outputs []tasks.Output
	checks  bool
	probes  bool
}

// Types asks p for its schema and returns a tasks.Type for each type it serves,
// documented as served by p, its capabilities found (tasks.Type.Init) from what its
// schema declares. A type whose attribute is one of the shared settings, or whose
// documentation disagrees with its capabilities, is an error, as for a built-in type.
func (p *Process) Types(ctx context.Context) ([]tasks.Type, error) {
	rpc, err := p.conn()
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	version := p.version
	p.mu.Unlock()
	res, err := rpc.Schema(ctx, &pluginpb.SchemaRequest{ProtocolVersion: uint32(version)})
	if err != nil {
		return nil, p.callError(ctx, "schema", err)
	}
	var out []tasks.Type
	for _, s := range res.GetTypes() {
		attrs, outputs, err := plugin.DecodeSchema(s)
		if err != nil {
			return nil, fmt.Errorf("plugin %q: %w", p.Name, err)
		}
		if err := uniqueNames(s.GetName(), attrs, outputs); err != nil {
			return nil, fmt.Errorf("plugin %q (%s): %w", p.Name, p.Path, err)
		}
		for _, a := range attrs {
			if tasks.IsMetaAttribute(a.Name) {
				return nil, fmt.Errorf("plugin %q: task type %q: attribute %q is reserved for the engine", p.Name, s.GetName(), a.Name)
			}
		}
		rt := &remoteType{proc: p, name: s.GetName(), attrs: attrs, outputs: outputs, checks: s.GetChecks(),
			probes: s.GetProbes() && version >= 2}
		destroys, probes := s.GetDestroys(), rt.checks || rt.probes
		t := tasks.Type{
			Name: s.GetName(), Summary: s.GetSummary(),
			Doc:     s.GetDoc() + fmt.Sprintf("\n\nServed by the plugin %q (%s).", p.Name, p.Path),
			Outputs: outputs, Example: s.GetExample(), Undo: s.GetUndo(), UndoAttr: s.GetUndoAttr(),
			DestroyReads: s.GetDestroyReads(), Refresh: refreshText(rt.checks, rt.probes),
			New: func() tasks.Task { return newTask(rt, destroys, probes) },
		}
		if err := t.Init(); err != nil {
			return nil, fmt.Errorf("plugin %q: task type %q: %w", p.Name, t.Name, err)
		}
		out = append(out, t)
	}
	return out, nil
}

// uniqueNames refuses a type's schema whose attribute or output names are empty or
// given twice: flow could tell neither from the other.
func uniqueNames(typ string, attrs []tasks.Attribute, outputs []tasks.Output) error {
	if typ == "" {
		return fmt.Errorf("a task type with an empty name")
	}
	for _, list := range []struct {
		what  string
		names []string
	}{{"attribute", attrNames(attrs)}, {"output", outputNames(outputs)}} {
		seen := map[string]bool{}
		for _, n := range list.names {
			switch {
			case n == "":
				return fmt.Errorf("task type %q: an %s with an empty name", typ, list.what)
			case seen[n]:
				return fmt.Errorf("task type %q: %s %q is declared twice", typ, list.what, n)
			}
			seen[n] = true
		}
	}
	return nil
}

func attrNames(attrs []tasks.Attribute) []string {
	out := make([]string, len(attrs))
	for i, a := range attrs {
		out[i] = a.Name
	}
	return out
}

func outputNames(outputs []tasks.Output) []string {
	out := make([]string, len(outputs))
	for i, o := range outputs {
		out[i] = o.Name
	}
	return out
}

// ValidateTimeout bounds a plugin's Validate, which must be fast and offline.
var ValidateTimeout = 30 * time.Second

// refreshText is what a refresh of a plugin type's instances looks at: its Probe, or
// its Check when it has no Probe (Task.Probe); otherwise nothing, and
// tasks.Type.RefreshText says so.
func refreshText(checks, probes bool) string {
	switch {
	case probes:
		return "the plugin's Probe finds the recorded object as it was"
	case checks:
		return "the plugin's Check finds the object present as configured"
	}
	return ""
}
