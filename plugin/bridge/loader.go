package bridge

import (
	"fmt"
	"sync"

	"github.com/flowdev/flow/tasks"
)

// Loader is flow's tasks.PluginLoader: it starts flow-plugin-host on the first Load
// and asks it for each plugin's types. A flow without a plugin block never calls
// Load, so nothing is started. Close ends the host, which ends its plugins.
//
// The zero value is not usable: use NewLoader. Its methods are safe for concurrent use.
type Loader struct {
	mu   sync.Mutex
	host *hostProc
	err  error // the host could not start; every Load says so
	// logLevel is the level the host logs at, to flow's stderr (SetLogLevel).
	logLevel string
}

// HostLogLevel is the environment variable that gives flow-plugin-host its log level:
// at debug, each plugin's stderr lines (go-plugin logs them at debug).
const HostLogLevel = "FLOW_PLUGIN_HOST_LOG_LEVEL"

// SetLogLevel makes the host, once started, log at level (flow's --log-level) to
// flow's stderr; "" or warn and above: it logs nothing of the plugins' stderr.
func (l *Loader) SetLogLevel(level string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.logLevel = level
}

// NewLoader returns a Loader that starts the host when first needed.
func NewLoader() *Loader { return &Loader{} }

var _ tasks.PluginLoader = (*Loader)(nil)

// Load asks the host to find, digest and start spec's plugin and returns its types.
func (l *Loader) Load(spec tasks.PluginSpec) (tasks.PluginUse, []tasks.Type, error) {
	h, err := l.started()
	if err != nil {
		return tasks.PluginUse{}, nil, fmt.Errorf("plugin %q: %w", spec.Name, err)
	}
	res, err := h.call(nil, &Message{Op: OpLoad, Spec: &spec}, nil)
	if err != nil {
		return tasks.PluginUse{}, nil, fmt.Errorf("plugin %q: %w", spec.Name, err)
	}
	var use tasks.PluginUse
	if res.Use != nil {
		use = *res.Use
	}
	var types []tasks.Type
	for _, wt := range res.Types {
		types = append(types, h.taskType(wt))
	}
	return use, types, res.Err.Error()
}

func (l *Loader) started() (*hostProc, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.host == nil && l.err == nil {
		l.host, l.err = startHost(l.logLevel)
	}
	return l.host, l.err
}

// Close ends the host, if one was started, and waits for it and its plugins.
func (l *Loader) Close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.host != nil {
		l.host.close()
		l.host = nil
	}
}
