package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime/debug"

	"github.com/hashicorp/go-hclog"

	"github.com/flowdev/flow/plugin"
	"github.com/flowdev/flow/plugin/sdk"
	pluginpb "github.com/flowdev/flow/plugin/sdk/proto"
	"github.com/flowdev/flow/tasks"
)

// Server implements the task plugin service over a registry. Serve uses it; tests
// may serve it on a gRPC server of their own.
type Server struct {
	pluginpb.UnimplementedTaskPluginServer
	reg     *tasks.Registry
	schemas []*pluginpb.TypeSchema
	attrs   map[string][]tasks.Attribute
	calls   sdk.Calls
}

// NewServer registers the types of every register function and checks them as
// Registry.Check does.
func NewServer(register ...func(*tasks.Registry) error) (*Server, error) {
	s := &Server{reg: tasks.NewRegistry(), attrs: map[string][]tasks.Attribute{}}
	for _, r := range register {
		if err := r(s.reg); err != nil {
			return nil, fmt.Errorf("register: %w", err)
		}
	}
	if err := s.reg.Check(); err != nil {
		return nil, fmt.Errorf("check types: %w", err)
	}
	for _, name := range s.reg.Names() {
		t, _ := s.reg.Lookup(name)
		schema, err := plugin.EncodeSchema(*t)
		if err != nil {
			return nil, fmt.Errorf("schema: %w", err)
		}
		s.schemas = append(s.schemas, schema)
		s.attrs[name], _ = tasks.Attributes(t.New())
	}
	return s, nil
}

// Schema lists the served types.
func (s *Server) Schema(_ context.Context, req *pluginpb.SchemaRequest) (*pluginpb.SchemaResponse, error) {
	if v := req.GetProtocolVersion(); v != plugin.ProtocolVersion {
		// go-plugin's handshake already agreed on this version: only a broken host differs.
		return nil, fmt.Errorf("flow speaks plugin protocol %d, this plugin %d", v, plugin.ProtocolVersion)
	}
	return &pluginpb.SchemaResponse{Types: s.schemas}, nil
}

// decode builds the task req describes; an *tasks.AttrError names a bad attribute.
func (s *Server) decode(req *pluginpb.TaskRequest) (tasks.Task, error) {
	t, ok := s.reg.Lookup(req.GetType())
	if !ok {
		return nil, fmt.Errorf("this plugin serves no task type %q", req.GetType())
	}
	values, err := plugin.DecodeAttributes(s.attrs[t.Name], req.GetAttributes())
	if err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	task := t.New()
	if err := tasks.Decode(task, values); err != nil {
		return nil, err
	}
	return task, nil
}

// Validate decodes the instance and calls its Validate.
func (s *Server) Validate(_ context.Context, req *pluginpb.TaskRequest) (*pluginpb.ValidateResponse, error) {
	task, err := s.decode(req)
	if err == nil {
		err = task.Validate()
	}
	msg, attr := errorFields(err)
	return &pluginpb.ValidateResponse{Error: msg, Attribute: attr}, nil
}

// Check calls the task's Check; a type that has none reports Absent.
func (s *Server) Check(ctx context.Context, req *pluginpb.TaskRequest) (*pluginpb.CheckResponse, error) {
	task, err := s.decode(req)
	if err != nil {
		return &pluginpb.CheckResponse{Error: err.Error()}, nil
	}
	c, ok := task.(plugin.Checker)
	if !ok {
		return &pluginpb.CheckResponse{State: pluginpb.CheckResponse_ABSENT}, nil
	}
	env := newEnv(req, io.Discard, io.Discard)
	res, err := c.Check(ctx, env)
	if err != nil {
		return &pluginpb.CheckResponse{Error: err.Error()}, nil
	}
	t, _ := s.reg.Lookup(req.GetType())
	outs, err := plugin.EncodeOutputs(t.Outputs, res.Outputs)
	if err != nil {
		return &pluginpb.CheckResponse{Error: err.Error()}, nil
	}
	return &pluginpb.CheckResponse{State: pluginpb.CheckResponse_State(res.State), Detail: res.Detail, Outputs: outs}, nil
}

// Probe calls the task's Probe with the recorded outputs: a drift is DIFFERS with the
// drift as detail. A type without Probe is asked its Check; one with neither reports
// PRESENT (flow does not ask a type whose schema sets neither).
func (s *Server) Probe(ctx context.Context, req *pluginpb.ProbeRequest) (*pluginpb.CheckResponse, error) {
	task, err := s.decode(req.GetTask())
	if err != nil {
		return &pluginpb.CheckResponse{Error: err.Error()}, nil
	}
	p, ok := task.(tasks.Prober)
	if !ok {
		if _, checks := task.(plugin.Checker); checks {
			return s.Check(ctx, req.GetTask())
		}
		return &pluginpb.CheckResponse{State: pluginpb.CheckResponse_PRESENT}, nil
	}
	var recorded tasks.Outputs
	if req.GetHasRecorded() {
		t, _ := s.reg.Lookup(req.GetTask().GetType())
		if recorded, err = plugin.DecodeOutputs(t.Outputs, req.GetRecorded()); err != nil {
			return &pluginpb.CheckResponse{Error: fmt.Sprintf("recorded outputs: %v", err)}, nil
		}
	}
	drift, err := p.Probe(ctx, newEnv(req.GetTask(), io.Discard, io.Discard), recorded)
	switch {
	case err != nil:
		return &pluginpb.CheckResponse{Error: err.Error()}, nil
	case drift != "":
		return &pluginpb.CheckResponse{State: pluginpb.CheckResponse_DIFFERS, Detail: drift}, nil
	}
	return &pluginpb.CheckResponse{State: pluginpb.CheckResponse_PRESENT}, nil
}

// Run runs the task, streaming what it writes, then sends its result.
func (s *Server) Run(req *pluginpb.TaskRequest, stream pluginpb.TaskPlugin_RunServer) error {
	task, err := s.decode(req)
	if err != nil {
		return stream.Send(resultEvent(nil, err))
	}
	out := &sdk.Sender{Send: stream.Send}
	env := newEnv(req, out.Writer(true), out.Writer(false))
	ctx, done := s.calls.Start(stream.Context(), req)
	defer done()
	outputs, err := guard(func() (tasks.Outputs, error) { return task.Run(ctx, env) })
	t, _ := s.reg.Lookup(req.GetType())
	res := resultEvent(nil, err)
	if outputs != nil {
		enc, encErr := plugin.EncodeOutputs(t.Outputs, outputs)
		if encErr != nil {
			res = resultEvent(nil, errors.Join(err, encErr))
		} else {
			res.GetResult().Outputs, res.GetResult().HasOutputs = enc, true
		}
	}
	return out.Event(res)
}

// Destroy calls the task's Destroy with the recorded outputs.
func (s *Server) Destroy(req *pluginpb.DestroyRequest, stream pluginpb.TaskPlugin_DestroyServer) error {
	task, err := s.decode(req.GetTask())
	if err != nil {
		return stream.Send(resultEvent(nil, err))
	}
	d, ok := task.(tasks.Destroyer)
	if !ok {
		return stream.Send(resultEvent(nil, fmt.Errorf("task type %q cannot be destroyed", req.GetTask().GetType())))
	}
	var recorded tasks.Outputs
	if req.GetHasRecorded() {
		t, _ := s.reg.Lookup(req.GetTask().GetType())
		if recorded, err = plugin.DecodeOutputs(t.Outputs, req.GetRecorded()); err != nil {
			return stream.Send(resultEvent(nil, fmt.Errorf("recorded outputs: %w", err)))
		}
	}
	out := &sdk.Sender{Send: stream.Send}
	env := newEnv(req.GetTask(), out.Writer(true), out.Writer(false))
	ctx, done := s.calls.Start(stream.Context(), req.GetTask())
	defer done()
	_, err = guard(func() (tasks.Outputs, error) { return nil, d.Destroy(ctx, env, recorded) })
	return out.Event(resultEvent(nil, err))
}

// guard turns a panic of the task into its error, as the engine does for built-in types.
func guard(f func() (tasks.Outputs, error)) (out tasks.Outputs, err error) {
	defer func() {
		if p := recover(); p != nil {
			fmt.Fprintf(Stderr, "task panicked: %v\n%s", p, debug.Stack())
			out, err = nil, fmt.Errorf("task panicked: %v", p)
		}
	}()
	return f()
}

func newEnv(req *pluginpb.TaskRequest, stdout, stderr io.Writer) *tasks.Env {
	return &tasks.Env{Address: req.GetAddress(), Attempt: int(req.GetAttempt()), Stdout: stdout, Stderr: stderr,
		Logger: hclog.New(&hclog.LoggerOptions{Name: req.GetAddress(), Output: Stderr, JSONFormat: true, Level: hclog.Info})}
}

func resultEvent(outputs map[string]*pluginpb.Value, err error) *pluginpb.Event {
	msg, attr := errorFields(err)
	return &pluginpb.Event{Event: &pluginpb.Event_Result{Result: &pluginpb.Result{
		Outputs: outputs, HasOutputs: outputs != nil, Error: msg, Attribute: attr}}}
}

// errorFields is err's message and, for an *tasks.AttrError, its attribute and the
// message without the attribute's prefix.
func errorFields(err error) (msg, attr string) {
	if err == nil {
		return "", ""
	}
	var ae *tasks.AttrError
	if errors.As(err, &ae) && ae.Error() == err.Error() {
		return ae.Err.Error(), ae.Attr
	}
	return err.Error(), ""
}

// Cancel cancels the context of a Run or Destroy.
func (s *Server) Cancel(_ context.Context, req *pluginpb.CancelRequest) (*pluginpb.CancelResponse, error) {
	s.calls.Cancel(req.GetRunId())
	return &pluginpb.CancelResponse{}, nil
}
