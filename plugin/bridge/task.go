package bridge

import (
	"context"
	"fmt"

	"github.com/zclconf/go-cty/cty"

	"github.com/flowdev/flow/tasks"
)

// remoteType is one type the host serves for a plugin.
type remoteType struct {
	host  *hostProc
	wire  WireType
	attrs []tasks.Attribute
}

// taskType is wt as a tasks.Type whose tasks call the host.
func (h *hostProc) taskType(wt WireType) tasks.Type {
	rt := &remoteType{host: h, wire: wt, attrs: wt.Attributes}
	return tasks.Type{
		Name: wt.Name, Summary: wt.Summary, Doc: wt.Doc, Outputs: wt.Outputs, Example: wt.Example,
		Undo: wt.Undo, UndoAttr: wt.UndoAttr, DestroyReads: wt.DestroyReads, Refresh: wt.Refresh,
		New: func() tasks.Task { return newTask(rt) },
	}
}

// Task is one instance of a plugin's type: its attribute values, and calls of the
// host, which calls the plugin. It behaves as the host's own task does.
type Task struct {
	typ    *remoteType
	values map[string]cty.Value
}

var _ tasks.Described = (*Task)(nil)

// newTask is a task of rt with the capabilities its WireType declares (tasks.WithCaps),
// and no other optional interface, so that registering its type finds them.
func newTask(rt *remoteType) tasks.Task {
	t := &Task{typ: rt}
	var destroy tasks.DestroyFunc
	var probe tasks.ProbeFunc
	if rt.wire.Destroys {
		destroy = t.destroy
	}
	if rt.wire.Probes {
		probe = t.probe
	}
	return tasks.WithCaps(t, destroy, probe)
}

// Schema is the type's attributes, from the plugin's schema.
func (t *Task) Schema() []tasks.Attribute { return t.typ.attrs }

// DecodeValues keeps values.
func (t *Task) DecodeValues(values map[string]cty.Value) error {
	t.values = values
	return nil
}

// request is a call of op on this task; env may be nil.
func (t *Task) request(op string, env *tasks.Env) (*Message, error) {
	values, err := EncodeValues(t.values)
	if err != nil {
		return nil, err
	}
	m := &Message{Op: op, Type: t.typ.wire.Handle, Values: values}
	if env != nil {
		m.Env = &WireEnv{Address: env.Address, Attempt: env.Attempt}
	}
	return m, nil
}

// do sends the call and streams its output to env.
func (t *Task) do(ctx context.Context, m *Message, env *tasks.Env) (*Message, error) {
	var out func(string, []byte)
	if env != nil {
		stdout, stderr := &stopWriter{w: env.Stdout}, &stopWriter{w: env.Stderr}
		out = func(op string, data []byte) {
			if op == OpStderr {
				stderr.Write(data)
			} else {
				stdout.Write(data)
			}
		}
	}
	return t.typ.host.call(ctx, m, out)
}

// Validate asks the plugin; an error about one attribute is a *tasks.AttrError.
func (t *Task) Validate() error {
	m, err := t.request(OpValidate, nil)
	if err != nil {
		return err
	}
	res, err := t.do(nil, m, nil)
	if err != nil {
		return err
	}
	return res.Err.Error()
}

// Run runs the task in the plugin (its Check first, as the host decides), streaming
// its output to env as it comes.
func (t *Task) Run(ctx context.Context, env *tasks.Env) (tasks.Outputs, error) {
	m, err := t.request(OpRun, env)
	if err != nil {
		return nil, err
	}
	res, err := t.do(ctx, m, env)
	if err != nil {
		return nil, err
	}
	var out tasks.Outputs
	if res.HasOutputs {
		if out, err = DecodeValues(res.Outputs); err != nil {
			return nil, fmt.Errorf("plugin outputs: %w", err)
		}
	}
	return out, res.Err.Error()
}

// probe asks the plugin whether what the recorded success made is still as it was.
func (t *Task) probe(ctx context.Context, env *tasks.Env, recorded tasks.Outputs) (string, error) {
	m, err := t.withRecorded(OpProbe, env, recorded)
	if err != nil {
		return "", err
	}
	res, err := t.do(ctx, m, env)
	if err != nil {
		return "", err
	}
	return res.Drift, res.Err.Error()
}

// destroy asks the plugin to undo the task, streaming its output to env.
func (t *Task) destroy(ctx context.Context, env *tasks.Env, recorded tasks.Outputs) error {
	m, err := t.withRecorded(OpDestroy, env, recorded)
	if err != nil {
		return err
	}
	res, err := t.do(ctx, m, env)
	if err != nil {
		return err
	}
	return res.Err.Error()
}

func (t *Task) withRecorded(op string, env *tasks.Env, recorded tasks.Outputs) (*Message, error) {
	m, err := t.request(op, env)
	if err != nil {
		return nil, err
	}
	if recorded != nil {
		m.HasRecorded = true
		if m.Recorded, err = EncodeValues(recorded); err != nil {
			return nil, fmt.Errorf("recorded outputs: %w", err)
		}
	}
	return m, nil
}

// stopWriter stops writing after the first error, as a built-in task's capture does.
type stopWriter struct {
	w      interface{ Write([]byte) (int, error) }
	broken bool
}

func (s *stopWriter) Write(p []byte) {
	if s.broken || s.w == nil {
		return
	}
	if _, err := s.w.Write(p); err != nil {
		s.broken = true
	}
}
