package host

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/zclconf/go-cty/cty"

	"github.com/flowdev/flow/plugin"
	pluginpb "github.com/flowdev/flow/plugin/sdk/proto"
	"github.com/flowdev/flow/tasks"
)

// Task is one instance of a plugin's type: its attribute values, and calls of the
// plugin for Validate and Run. It is a tasks.Described: the engine decodes into it
// as into a built-in config struct.
type Task struct {
	typ    *remoteType
	values map[string]cty.Value
}

var _ tasks.Described = (*Task)(nil)

// newTask is a task of rt implementing Destroyer when destroys, Prober when probes
// (tasks.WithCaps), and no other optional interface, so that registering its type
// finds what the plugin declares.
func newTask(rt *remoteType, destroys, probes bool) tasks.Task {
	t := &Task{typ: rt}
	var destroy tasks.DestroyFunc
	var probe tasks.ProbeFunc
	if destroys {
		destroy = t.destroy
	}
	if probes {
		probe = t.probe
	}
	return tasks.WithCaps(t, destroy, probe)
}

// Schema is the type's attributes, from the plugin's schema.
func (t *Task) Schema() []tasks.Attribute { return t.typ.attrs }

// DecodeValues keeps values (unmarked, converted to each attribute's type).
func (t *Task) DecodeValues(values map[string]cty.Value) error {
	t.values = values
	return nil
}

func (t *Task) request(env *tasks.Env) (*pluginpb.TaskRequest, error) {
	attrs, err := plugin.EncodeAttributes(t.typ.attrs, t.values)
	if err != nil {
		return nil, err
	}
	req := &pluginpb.TaskRequest{Type: t.typ.name, Attributes: attrs}
	if env != nil {
		req.Address, req.Attempt = env.Address, int32(env.Attempt)
	}
	return req, nil
}

// Validate asks the plugin; an error about one attribute is a *tasks.AttrError.
func (t *Task) Validate() error {
	req, err := t.request(nil)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), ValidateTimeout)
	defer cancel()
	rpc, err := t.typ.proc.conn()
	if err != nil {
		return err
	}
	res, err := rpc.Validate(ctx, req)
	if err != nil {
		return t.typ.proc.callError(ctx, "validate", err)
	}
	return remoteError(res.GetError(), res.GetAttribute())
}

// Run asks the plugin's Check first, when its type has one: what is already present
// is reported so and not run again, what differs fails. Otherwise it runs the task in
// the plugin, streaming its output to env.
func (t *Task) Run(ctx context.Context, env *tasks.Env) (tasks.Outputs, error) {
	req, err := t.request(env)
	if err != nil {
		return nil, err
	}
	rpc, err := t.typ.proc.conn()
	if err != nil {
		return nil, err
	}
	if t.typ.checks {
		if out, done, err := t.check(ctx, rpc, req, env); done {
			return out, err
		}
	}
	return t.stream(ctx, "run", rpc, req, func(sctx context.Context) (eventStream, error) {
		return rpc.Run(sctx, req)
	}, env)
}

// check reports done when Check decided the attempt: present (with its outputs),
// differs, or failed.
func (t *Task) check(ctx context.Context, rpc pluginpb.TaskPluginClient, req *pluginpb.TaskRequest, env *tasks.Env) (tasks.Outputs, bool, error) {
	res, err := rpc.Check(ctx, req)
	switch {
	case err != nil:
		return nil, true, t.typ.proc.callError(ctx, "check", err)
	case res.GetError() != "":
		return nil, true, fmt.Errorf("check: %s", res.GetError())
	case res.GetState() == pluginpb.CheckResponse_DIFFERS:
		return nil, true, fmt.Errorf("exists but differs: %s", res.GetDetail())
	case res.GetState() != pluginpb.CheckResponse_PRESENT:
		return nil, false, nil
	}
	out, err := plugin.DecodeOutputs(t.typ.outputs, res.GetOutputs())
	if err != nil {
		return nil, true, fmt.Errorf("check: %w", err)
	}
	what := "already present"
	if d := res.GetDetail(); d != "" {
		what += " (" + d + ")"
	}
	fmt.Fprintln(env.Stdout, what)
	return out, true, nil
}

// destroy asks the plugin to undo the task, streaming its output to env.
func (t *Task) destroy(ctx context.Context, env *tasks.Env, recorded tasks.Outputs) error {
	req, err := t.request(env)
	if err != nil {
		return err
	}
	dreq := &pluginpb.DestroyRequest{Task: req, HasRecorded: recorded != nil}
	if recorded != nil {
		if dreq.Recorded, err = plugin.EncodeOutputs(t.typ.outputs, recorded); err != nil {
			return fmt.Errorf("recorded outputs: %w", err)
		}
	}
	rpc, err := t.typ.proc.conn()
	if err != nil {
		return err
	}
	_, err = t.stream(ctx, "destroy", rpc, req, func(sctx context.Context) (eventStream, error) {
		return rpc.Destroy(sctx, dreq)
	}, env)
	return err
}

type eventStream interface {
	Recv() (*pluginpb.Event, error)
}

// receive copies a stream's output to env until its result; a stream that breaks
// before it is the plugin's failure.
func (t *Task) receive(ctx context.Context, what string, stream eventStream, env *tasks.Env) (tasks.Outputs, error) {
	stdout, stderr := &stopWriter{w: env.Stdout}, &callWriter{w: env.Stderr}
	// What the process writes to its stderr meanwhile is this call's output too (flow
	// logs shows it with the attempt's): the plugin's log, not only when it crashes.
	t.typ.proc.mu.Lock()
	proc := t.typ.proc.tail
	t.typ.proc.mu.Unlock()
	defer proc.follow(stderr)()
	for {
		ev, err := stream.Recv()
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = errNoResult
			}
			return nil, t.typ.proc.callError(ctx, what, err)
		}
		switch e := ev.GetEvent().(type) {
		case *pluginpb.Event_Stdout:
			stdout.Write(e.Stdout)
		case *pluginpb.Event_Stderr:
			stderr.Write(e.Stderr)
		case *pluginpb.Event_Result:
			var out tasks.Outputs
			if e.Result.GetHasOutputs() {
				if out, err = plugin.DecodeOutputs(t.typ.outputs, e.Result.GetOutputs()); err != nil {
					return nil, fmt.Errorf("plugin %q: %w", t.typ.proc.Name, err)
				}
			}
			err := remoteError(e.Result.GetError(), e.Result.GetAttribute())
			if err != nil && ctx.Err() != nil {
				err = fmt.Errorf("%s: %w", strings.TrimSuffix(err.Error(), ": "+ctx.Err().Error()), ctx.Err())
			}
			return out, err
		}
	}
}

// remoteError is the plugin's error message as an error, an *tasks.AttrError when it
// names an attribute.
func remoteError(msg, attr string) error {
	switch {
	case msg == "":
		return nil
	case attr != "":
		return &tasks.AttrError{Attr: attr, Err: errors.New(msg)}
	}
	return errors.New(msg)
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

// probe asks the plugin whether what the recorded success made is still as it was:
// its Probe (protocol 2), or its Check when the type has no Probe (a type with
// neither is no tasks.Prober). A non-empty drift carries the plugin's detail.
func (t *Task) probe(ctx context.Context, env *tasks.Env, recorded tasks.Outputs) (string, error) {
	req, err := t.request(env)
	if err != nil {
		return "", err
	}
	rpc, err := t.typ.proc.conn()
	if err != nil {
		return "", err
	}
	what, call := "check", func() (*pluginpb.CheckResponse, error) { return rpc.Check(ctx, req) }
	if t.typ.probes {
		preq := &pluginpb.ProbeRequest{Task: req, HasRecorded: recorded != nil}
		if recorded != nil {
			if preq.Recorded, err = plugin.EncodeOutputs(t.typ.outputs, recorded); err != nil {
				return "", fmt.Errorf("recorded outputs: %w", err)
			}
		}
		what, call = "probe", func() (*pluginpb.CheckResponse, error) { return rpc.Probe(ctx, preq) }
	}
	res, err := call()
	if err != nil {
		return "", t.typ.proc.callError(ctx, what, err)
	}
	return probeAnswer(what, res)
}

// probeAnswer reads a plugin's answer to a probe or check: "" when its object is as
// recorded, else how it drifted; an error the plugin reported is an error, never "no
// drift".
func probeAnswer(what string, res *pluginpb.CheckResponse) (string, error) {
	switch {
	case res.GetError() != "":
		return "", fmt.Errorf("%s: %s", what, res.GetError())
	case res.GetState() == pluginpb.CheckResponse_DIFFERS:
		return withDetail("it differs", res.GetDetail()), nil
	case res.GetState() != pluginpb.CheckResponse_PRESENT:
		return withDetail("it is gone", res.GetDetail()), nil
	}
	return "", nil
}

// withDetail is what, followed by the plugin's detail when it gave one.
func withDetail(what, detail string) string {
	if detail == "" {
		return what
	}
	return what + ": " + detail
}
