package host

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/flowdev/flow/plugin/bridge"
	"github.com/flowdev/flow/tasks"
)

// ServeBridge answers package bridge's calls on conn with l until conn ends, then
// closes l (ending every plugin it started). It is the whole of flow-plugin-host: flow
// starts it when a flow declares a plugin, so that flow itself does not link gRPC.
func ServeBridge(conn io.ReadWriter, l *Loader) error {
	s := &bridgeServer{loader: l, enc: json.NewEncoder(conn), cancels: map[uint64]context.CancelFunc{}}
	defer l.Close()
	dec := json.NewDecoder(bufio.NewReader(conn))
	for {
		var m bridge.Message
		if err := dec.Decode(&m); err != nil {
			s.calls.Wait()
			if err == io.EOF {
				return nil
			}
			return fmt.Errorf("read flow's call: %w", err)
		}
		if m.Op == bridge.OpCancel {
			s.cancel(m.ID)
			continue
		}
		ctx, cancel := s.context(&m)
		s.calls.Add(1)
		go func() {
			defer s.calls.Done()
			defer s.forget(m.ID)
			defer cancel()
			res := s.answer(ctx, &m)
			res.ID, res.Op = m.ID, bridge.OpDone
			s.send(res)
		}()
	}
}

type bridgeServer struct {
	loader *Loader
	wmu    sync.Mutex
	enc    *json.Encoder
	calls  sync.WaitGroup

	mu      sync.Mutex
	types   []tasks.Type // by handle
	cancels map[uint64]context.CancelFunc
}

// context is the call's context: its deadline, cancelled already or on flow's cancel.
func (s *bridgeServer) context(m *bridge.Message) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	if m.Deadline != 0 {
		var dcancel context.CancelFunc
		ctx, dcancel = context.WithDeadline(ctx, time.Unix(0, m.Deadline))
		inner := cancel
		cancel = func() { dcancel(); inner() }
	}
	if m.Cancelled {
		cancel()
	}
	s.mu.Lock()
	s.cancels[m.ID] = cancel
	s.mu.Unlock()
	return ctx, cancel
}

func (s *bridgeServer) cancel(id uint64) {
	s.mu.Lock()
	cancel := s.cancels[id]
	s.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

func (s *bridgeServer) forget(id uint64) {
	s.mu.Lock()
	delete(s.cancels, id)
	s.mu.Unlock()
}

func (s *bridgeServer) send(m *bridge.Message) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	_ = s.enc.Encode(m) // flow is gone: the next read ends the host
}

// answer runs one call; its error travels in the result.
func (s *bridgeServer) answer(ctx context.Context, m *bridge.Message) *bridge.Message {
	if m.Op == bridge.OpLoad {
		return s.load(m)
	}
	res := &bridge.Message{}
	task, err := s.task(m)
	if err != nil {
		res.Err = bridge.EncodeError(err)
		return res
	}
	env := s.env(m)
	switch m.Op {
	case bridge.OpValidate:
		err = task.Validate()
	case bridge.OpRun:
		var out tasks.Outputs
		if out, err = task.Run(ctx, env); out != nil {
			res.HasOutputs = true
			if res.Outputs, err = encodeOutputs(out, err); err != nil {
				break
			}
		}
	case bridge.OpProbe, bridge.OpDestroy:
		var recorded tasks.Outputs
		if m.HasRecorded {
			if recorded, err = bridge.DecodeValues(m.Recorded); err != nil {
				break
			}
		}
		res.Drift, err = s.probeOrDestroy(ctx, m, task, env, recorded)
	default:
		err = fmt.Errorf("unknown call %q", m.Op)
	}
	res.Err = bridge.EncodeError(err)
	return res
}

// probeOrDestroy calls task's Probe or Destroy, as m asks, when task has it.
func (s *bridgeServer) probeOrDestroy(ctx context.Context, m *bridge.Message, task tasks.Task, env *tasks.Env, recorded tasks.Outputs) (string, error) {
	if m.Op == bridge.OpProbe {
		if p, ok := task.(tasks.Prober); ok {
			return p.Probe(ctx, env, recorded)
		}
		return "", fmt.Errorf("task type %q cannot be probed", s.typeName(m.Type))
	}
	if d, ok := task.(tasks.Destroyer); ok {
		return "", d.Destroy(ctx, env, recorded)
	}
	return "", fmt.Errorf("task type %q cannot be destroyed", s.typeName(m.Type))
}

// encodeOutputs is out for the wire, keeping runErr, the Run's own error.
func encodeOutputs(out tasks.Outputs, runErr error) (map[string]bridge.WireValue, error) {
	wire, err := bridge.EncodeValues(out)
	if err != nil {
		return nil, fmt.Errorf("plugin outputs: %w", err)
	}
	return wire, runErr
}

func (s *bridgeServer) load(m *bridge.Message) *bridge.Message {
	use, types, err := s.loader.Load(*m.Spec)
	res := &bridge.Message{Use: &use, Err: bridge.EncodeError(err)}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range types {
		wt := bridge.WireType{Handle: len(s.types), Name: t.Name, Summary: t.Summary, Doc: t.Doc,
			Outputs: t.Outputs, Example: t.Example, Undo: t.Undo, UndoAttr: t.UndoAttr,
			DestroyReads: t.DestroyReads, Refresh: t.Refresh}
		task := t.New()
		if d, ok := task.(tasks.Described); ok {
			wt.Attributes = d.Schema()
		}
		wt.Destroys, wt.Probes = t.Destroys(), t.Probes() // as Process.Types found them
		s.types = append(s.types, t)
		res.Types = append(res.Types, wt)
	}
	return res
}

// task is a new task of the call's type with the call's values.
func (s *bridgeServer) task(m *bridge.Message) (tasks.Task, error) {
	s.mu.Lock()
	if m.Type < 0 || m.Type >= len(s.types) {
		s.mu.Unlock()
		return nil, fmt.Errorf("unknown task type handle %d", m.Type)
	}
	t := s.types[m.Type]
	s.mu.Unlock()
	task := t.New()
	values, err := bridge.DecodeValues(m.Values)
	if err != nil {
		return nil, err
	}
	if d, ok := task.(tasks.Described); ok {
		if err := d.DecodeValues(values); err != nil {
			return nil, err
		}
	}
	return task, nil
}

func (s *bridgeServer) typeName(handle int) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.types[handle].Name
}

// env is the call's tasks.Env: its output streams send to flow as they are written.
func (s *bridgeServer) env(m *bridge.Message) *tasks.Env {
	if m.Env == nil {
		return nil
	}
	return &tasks.Env{Address: m.Env.Address, Attempt: m.Env.Attempt,
		Stdout: &bridgeWriter{s: s, id: m.ID, op: bridge.OpStdout},
		Stderr: &bridgeWriter{s: s, id: m.ID, op: bridge.OpStderr}}
}

// bridgeWriter sends what a task writes to one of its streams to flow.
type bridgeWriter struct {
	s  *bridgeServer
	id uint64
	op string
}

func (w *bridgeWriter) Write(p []byte) (int, error) {
	w.s.send(&bridge.Message{ID: w.id, Op: w.op, Data: append([]byte(nil), p...)})
	return len(p), nil
}
