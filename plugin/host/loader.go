package host

import (
	"context"
	"fmt"
	"sync"

	"github.com/hashicorp/go-hclog"

	"github.com/flowdev/flow/tasks"
)

// Loader is flow's tasks.PluginLoader: it starts each executable once per command
// and keeps its types. Close ends every process it started.
type Loader struct {
	logger hclog.Logger
	mu     sync.Mutex
	loaded map[string]*loaded // by path, sha256 and working directory
}

type loaded struct {
	proc  *Process
	types []tasks.Type
	err   error
}

// NewLoader returns a Loader whose plugins log to logger (nil: nowhere).
func NewLoader(logger hclog.Logger) *Loader {
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	return &Loader{logger: logger, loaded: map[string]*loaded{}}
}

var _ tasks.PluginLoader = (*Loader)(nil)

// Load finds spec's executable, takes its sha256, starts it and reads its schema.
func (l *Loader) Load(spec tasks.PluginSpec) (tasks.PluginUse, []tasks.Type, error) {
	path, err := Find(spec.Source, spec.Dir)
	if err != nil {
		return tasks.PluginUse{}, nil, fmt.Errorf("find plugin %q: %w", spec.Name, err)
	}
	sum, err := Sum(path)
	if err != nil {
		return tasks.PluginUse{}, nil, fmt.Errorf("plugin %q: %w", spec.Name, err)
	}
	use := tasks.PluginUse{Name: spec.Name, Path: path, Sha256: sum}
	l.mu.Lock()
	defer l.mu.Unlock()
	key := path + "\x00" + sum + "\x00" + spec.WorkDir
	ld, ok := l.loaded[key]
	if !ok {
		proc := &Process{Name: spec.Name, Path: path, Sha256: sum, Dir: spec.WorkDir, logger: l.logger.Named(spec.Name), tail: &tail{}}
		ld = &loaded{proc: proc}
		ld.types, ld.err = proc.Types(context.Background())
		l.loaded[key] = ld
	}
	for _, t := range ld.types {
		use.Types = append(use.Types, t.Name)
	}
	return use, ld.types, ld.err
}

// Close ends every plugin process the loader started.
func (l *Loader) Close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, ld := range l.loaded {
		ld.proc.Kill()
	}
}
