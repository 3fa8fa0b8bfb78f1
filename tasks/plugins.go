package tasks

import "fmt"

// PluginSpec is one plugin block of a flow: the plugin's name and where its
// executable is (Source: a path relative to Dir, the flow's directory, or a name
// looked up in the plugin directories). WorkDir is the directory the flow's tasks act
// in, which the plugin's process starts in; "" means the process's.
type PluginSpec struct {
	Name, Source, Dir string
	WorkDir           string
}

// PluginUse is a plugin a flow loaded: the executable found and its sha256, which a
// run records (as engine/state's Plugin, this type) so a resume can say that the
// plugin changed.
type PluginUse struct {
	Name   string `json:"name"`
	Path   string `json:"path"`
	Sha256 string `json:"sha256"`
	// Types are the task types it serves.
	Types []string `json:"types,omitempty"`
}

// PluginLoader starts the plugin a spec names and returns the task types it serves.
// It returns the same types for the same executable when asked again, and keeps the
// processes it started until whoever built it closes them.
type PluginLoader interface {
	Load(spec PluginSpec) (PluginUse, []Type, error)
}

// PluginLoader is the loader SetPluginLoader set (nil: none).
func (r *Registry) PluginLoader() PluginLoader { return r.plugins }

// SetPluginLoader makes WithPlugin start plugins with l.
func (r *Registry) SetPluginLoader(l PluginLoader) { r.plugins = l }

// WithPlugin returns a registry of r's types and those of the plugin spec names; r
// is left as it is. Without a loader (SetPluginLoader) it is an error.
func (r *Registry) WithPlugin(spec PluginSpec) (*Registry, PluginUse, error) {
	if r.plugins == nil {
		return nil, PluginUse{}, errNoPluginLoader
	}
	use, types, err := r.plugins.Load(spec)
	if err != nil {
		return nil, use, err
	}
	out := &Registry{types: make(map[string]*Type, len(r.types)+len(types)), plugins: r.plugins,
		servedBy: make(map[string]string, len(r.servedBy)+len(types))}
	for name, t := range r.types {
		out.types[name] = t
	}
	for typ, p := range r.servedBy {
		out.servedBy[typ] = p
	}
	for _, t := range types {
		if _, dup := out.types[t.Name]; dup {
			switch other := out.servedBy[t.Name]; {
			case other == spec.Name:
				return nil, use, fmt.Errorf("plugin %q serves the task type %q twice", spec.Name, t.Name)
			case other != "":
				return nil, use, fmt.Errorf("plugin %q serves the task type %q, which plugin %q serves already", spec.Name, t.Name, other)
			default:
				return nil, use, fmt.Errorf("plugin %q serves the task type %q, which is a built-in type", spec.Name, t.Name)
			}
		}
		if err := out.Register(t); err != nil {
			return nil, use, err
		}
		out.servedBy[t.Name] = spec.Name
	}
	return out, use, nil
}
