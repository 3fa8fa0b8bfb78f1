package sdk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"runtime/debug"

	pluginpb "github.com/flowdev/flow/plugin/sdk/proto"
)

// server is the task plugin service over Types.
type server struct {
	pluginpb.UnimplementedTaskPluginServer
	types map[string]*Type
	order []string
	calls Calls
}

// NewServer checks types (each named once, with Run, attributes and outputs named and
// typed) and returns the task plugin service over them; Serve serves it. A test of a
// plugin may serve it on a gRPC server of its own.
func NewServer(types ...Type) (pluginpb.TaskPluginServer, error) {
	s := &server{types: map[string]*Type{}}
	var errs []error
	for i := range types {
		t := &types[i]
		switch {
		case t.Name == "":
			errs = append(errs, fmt.Errorf("type %d has no name", i))
		case s.types[t.Name] != nil:
			errs = append(errs, fmt.Errorf("type %q is served twice", t.Name))
		case t.Run == nil:
			errs = append(errs, fmt.Errorf("type %q has no Run", t.Name))
		}
		for _, a := range t.Attributes {
			if a.Name == "" || !json.Valid([]byte(a.Type)) {
				errs = append(errs, fmt.Errorf("type %q: attribute %q has no name or no valid type", t.Name, a.Name))
			}
		}
		for _, o := range t.Outputs {
			if o.Name == "" || !json.Valid([]byte(o.Type)) {
				errs = append(errs, fmt.Errorf("type %q: output %q has no name or no valid type", t.Name, o.Name))
			}
		}
		s.types[t.Name] = t
		s.order = append(s.order, t.Name)
	}
	return s, errors.Join(errs...)
}

func (s *server) Schema(_ context.Context, req *pluginpb.SchemaRequest) (*pluginpb.SchemaResponse, error) {
	if v := req.GetProtocolVersion(); v != ProtocolVersion {
		return nil, fmt.Errorf("flow speaks plugin protocol %d, this plugin %d", v, ProtocolVersion)
	}
	res := &pluginpb.SchemaResponse{}
	for _, name := range s.order {
		t := s.types[name]
		ts := &pluginpb.TypeSchema{Name: t.Name, Summary: t.Summary, Doc: t.Doc, Example: t.Example,
			Undo: t.Undo, UndoAttr: t.UndoAttr, DestroyReads: t.DestroyReads,
			Destroys: t.Destroy != nil, Checks: t.Check != nil, Probes: t.Probe != nil}
		for _, a := range t.Attributes {
			ts.Attributes = append(ts.Attributes, &pluginpb.AttributeSchema{Name: a.Name, Type: []byte(a.Type),
				Required: a.Required, Sensitive: a.Sensitive, Doc: a.Doc})
		}
		for _, o := range t.Outputs {
			ts.Outputs = append(ts.Outputs, &pluginpb.OutputSchema{Name: o.Name, Type: []byte(o.Type),
				Sensitive: o.Sensitive, Doc: o.Doc})
		}
		res.Types = append(res.Types, ts)
	}
	return res, nil
}

// decode is the type req names and its attribute values.
func (s *server) decode(req *pluginpb.TaskRequest) (*Type, Task, error) {
	t := s.types[req.GetType()]
	if t == nil {
		return nil, nil, fmt.Errorf("this plugin serves no task type %q", req.GetType())
	}
	task := Task{}
	for _, a := range t.Attributes {
		raw, ok := req.GetAttributes()[a.Name]
		if !ok {
			continue
		}
		v, err := decodeValue(raw, a.Type)
		if err != nil {
			return nil, nil, Invalid(a.Name, "decode: %v", err)
		}
		if v != nil {
			task[a.Name] = v
		}
	}
	return t, task, nil
}

// decodeValue is cty JSON of type typ as a Go value: a dynamic value's JSON carries
// its type beside it ({"value": ..., "type": ...}).
func decodeValue(raw []byte, typ ValueType) (any, error) {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, err
	}
	if typ == Dynamic {
		if m, ok := v.(map[string]any); ok {
			return m["value"], nil
		}
	}
	return v, nil
}

func (s *server) decodeRecorded(t *Type, in map[string]*pluginpb.Value) (Values, error) {
	types := map[string]ValueType{}
	for _, o := range t.Outputs {
		types[o.Name] = o.Type
	}
	out := Values{}
	for name, v := range in {
		val, err := decodeValue(v.GetJson(), types[name])
		if err != nil {
			return nil, fmt.Errorf("recorded output %q: %w", name, err)
		}
		out[name] = val
	}
	return out, nil
}

func encodeOutputs(t *Type, vals Values) (map[string]*pluginpb.Value, error) {
	decl := map[string]Output{}
	for _, o := range t.Outputs {
		decl[o.Name] = o
	}
	out := map[string]*pluginpb.Value{}
	for name, v := range vals {
		o, ok := decl[name]
		if !ok {
			return nil, fmt.Errorf("output %q is not declared by type %q", name, t.Name)
		}
		var b []byte
		var err error
		if o.Type == Dynamic {
			b, err = json.Marshal(map[string]any{"value": v, "type": json.RawMessage(typeOf(v))})
		} else {
			b, err = json.Marshal(v)
		}
		if err != nil {
			return nil, fmt.Errorf("output %q: %w", name, err)
		}
		out[name] = &pluginpb.Value{Json: b, Sensitive: o.Sensitive}
	}
	return out, nil
}

// typeOf is the cty type JSON of a plain JSON value, for a dynamic output.
func typeOf(v any) ValueType {
	b, _ := json.Marshal(v)
	var plain any
	_ = json.Unmarshal(b, &plain)
	switch x := plain.(type) {
	case bool:
		return Bool
	case float64:
		return Number
	case string:
		return String
	case []any:
		elems := "["
		for i, e := range x {
			if i > 0 {
				elems += ","
			}
			elems += string(typeOf(e))
		}
		return ValueType(`["tuple",` + elems + `]]`)
	case map[string]any:
		attrs := map[string]ValueType{}
		for k, e := range x {
			attrs[k] = typeOf(e)
		}
		return ObjectOf(attrs)
	}
	return Dynamic
}

func (s *server) Validate(_ context.Context, req *pluginpb.TaskRequest) (*pluginpb.ValidateResponse, error) {
	t, task, err := s.decode(req)
	if err == nil && t.Validate != nil {
		err = guard(func() error { return t.Validate(task) })
	}
	msg, attr := ErrorFields(err)
	return &pluginpb.ValidateResponse{Error: msg, Attribute: attr}, nil
}

func newEnv(req *pluginpb.TaskRequest, stdout, stderr io.Writer) *Env {
	return &Env{Address: req.GetAddress(), Attempt: int(req.GetAttempt()), Stdout: stdout, Stderr: stderr,
		Log: log.New(Stderr, req.GetAddress()+": ", 0)}
}

func (s *server) answer(t *Type, ask func() (Answer, error)) *pluginpb.CheckResponse {
	var a Answer
	err := guard(func() (err error) { a, err = ask(); return err })
	if err != nil {
		return &pluginpb.CheckResponse{Error: err.Error()}
	}
	res := &pluginpb.CheckResponse{State: pluginpb.CheckResponse_State(a.State), Detail: a.Detail}
	if a.State == Present && a.Outputs != nil {
		if res.Outputs, err = encodeOutputs(t, a.Outputs); err != nil {
			return &pluginpb.CheckResponse{Error: err.Error()}
		}
	}
	return res
}

func (s *server) Check(ctx context.Context, req *pluginpb.TaskRequest) (*pluginpb.CheckResponse, error) {
	t, task, err := s.decode(req)
	if err != nil {
		return &pluginpb.CheckResponse{Error: err.Error()}, nil
	}
	if t.Check == nil {
		return &pluginpb.CheckResponse{State: pluginpb.CheckResponse_ABSENT}, nil
	}
	env := newEnv(req, io.Discard, io.Discard)
	return s.answer(t, func() (Answer, error) { return t.Check(ctx, task, env) }), nil
}

func (s *server) Probe(ctx context.Context, req *pluginpb.ProbeRequest) (*pluginpb.CheckResponse, error) {
	t, task, err := s.decode(req.GetTask())
	if err != nil {
		return &pluginpb.CheckResponse{Error: err.Error()}, nil
	}
	if t.Probe == nil {
		return s.Check(ctx, req.GetTask())
	}
	var recorded Values
	if req.GetHasRecorded() {
		if recorded, err = s.decodeRecorded(t, req.GetRecorded()); err != nil {
			return &pluginpb.CheckResponse{Error: err.Error()}, nil
		}
	}
	env := newEnv(req.GetTask(), io.Discard, io.Discard)
	return s.answer(t, func() (Answer, error) { return t.Probe(ctx, task, env, recorded) }), nil
}

func (s *server) Run(req *pluginpb.TaskRequest, stream pluginpb.TaskPlugin_RunServer) error {
	t, task, err := s.decode(req)
	if err == nil && t.Validate != nil {
		err = guard(func() error { return t.Validate(task) })
	}
	if err != nil {
		return stream.Send(resultEvent(nil, err))
	}
	out := &Sender{Send: stream.Send}
	env := newEnv(req, out.Writer(true), out.Writer(false))
	ctx, done := s.calls.Start(stream.Context(), req)
	defer done()
	var vals Values
	err = guard(func() (err error) { vals, err = t.Run(ctx, task, env); return err })
	res := resultEvent(nil, err)
	if vals != nil {
		enc, encErr := encodeOutputs(t, vals)
		if encErr != nil {
			res = resultEvent(nil, errors.Join(err, encErr))
		} else {
			res.GetResult().Outputs, res.GetResult().HasOutputs = enc, true
		}
	}
	return out.Event(res)
}

func (s *server) Destroy(req *pluginpb.DestroyRequest, stream pluginpb.TaskPlugin_DestroyServer) error {
	t, task, err := s.decode(req.GetTask())
	if err == nil && t.Destroy == nil {
		err = fmt.Errorf("task type %q cannot be destroyed", t.Name)
	}
	var recorded Values
	if err == nil && req.GetHasRecorded() {
		recorded, err = s.decodeRecorded(t, req.GetRecorded())
	}
	if err != nil {
		return stream.Send(resultEvent(nil, err))
	}
	out := &Sender{Send: stream.Send}
	env := newEnv(req.GetTask(), out.Writer(true), out.Writer(false))
	ctx, done := s.calls.Start(stream.Context(), req.GetTask())
	defer done()
	err = guard(func() error { return t.Destroy(ctx, task, env, recorded) })
	return out.Event(resultEvent(nil, err))
}

func (s *server) Cancel(_ context.Context, req *pluginpb.CancelRequest) (*pluginpb.CancelResponse, error) {
	s.calls.Cancel(req.GetRunId())
	return &pluginpb.CancelResponse{}, nil
}

// guard turns a panic of the plugin's code into its error, with the stack on Stderr.
func guard(f func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			fmt.Fprintf(Stderr, "task panicked: %v\n%s", p, debug.Stack())
			err = fmt.Errorf("task panicked: %v", p)
		}
	}()
	return f()
}

func resultEvent(outputs map[string]*pluginpb.Value, err error) *pluginpb.Event {
	msg, attr := ErrorFields(err)
	return &pluginpb.Event{Event: &pluginpb.Event_Result{Result: &pluginpb.Result{
		Outputs: outputs, HasOutputs: outputs != nil, Error: msg, Attribute: attr}}}
}
