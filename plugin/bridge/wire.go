// Package bridge is flow's side of the plugin host: it starts the flow-plugin-host
// executable when a flow declares a plugin, and serves the task types that host
// loads as tasks.Type values whose calls travel to it as JSON lines. It links only
// the standard library (and cty, which flow links anyway), so a flow without plugins
// pays nothing for gRPC and go-plugin. It does not talk to plugins itself: the host
// (package plugin/host, command flow-plugin-host) does, and ServeHost there answers
// this package's messages.
package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/zclconf/go-cty/cty"
	ctyjson "github.com/zclconf/go-cty/cty/json"

	"github.com/flowdev/flow/tasks"
)

// Op names what a Message asks or answers.
const (
	OpLoad     = "load"     // flow → host: Spec
	OpValidate = "validate" // flow → host: Type, Values
	OpRun      = "run"      // flow → host: Type, Values, Env
	OpDestroy  = "destroy"  // flow → host: Type, Values, Env, Recorded
	OpProbe    = "probe"    // flow → host: Type, Values, Env, Recorded
	OpCancel   = "cancel"   // flow → host: the call ID is cancelled
	OpStdout   = "stdout"   // host → flow: Data, the call's task output
	OpStderr   = "stderr"   // host → flow: Data
	OpDone     = "done"     // host → flow: the call's result
)

// Message is one line of the bridge, either way. A call's ID is chosen by flow; the
// host answers with any number of stdout/stderr messages and one done.
type Message struct {
	ID uint64 `json:"id"`
	Op string `json:"op"`

	Spec        *tasks.PluginSpec    `json:"spec,omitempty"`
	Type        int                  `json:"type,omitempty"` // a WireType's Handle
	Values      map[string]WireValue `json:"values,omitempty"`
	Env         *WireEnv             `json:"env,omitempty"`
	Recorded    map[string]WireValue `json:"recorded,omitempty"`
	HasRecorded bool                 `json:"has_recorded,omitempty"`
	Deadline    int64                `json:"deadline,omitempty"` // unix nanoseconds, 0: none
	Cancelled   bool                 `json:"cancelled,omitempty"`
	Data        []byte               `json:"data,omitempty"`
	Use         *tasks.PluginUse     `json:"use,omitempty"`
	Types       []WireType           `json:"types,omitempty"`
	Outputs     map[string]WireValue `json:"outputs,omitempty"`
	HasOutputs  bool                 `json:"has_outputs,omitempty"`
	Drift       string               `json:"drift,omitempty"`
	Err         *WireError           `json:"err,omitempty"`
}

// WireEnv is what a plugin task reads of its tasks.Env besides its output streams.
type WireEnv struct {
	Address string `json:"address"`
	Attempt int    `json:"attempt"`
}

// WireType is a tasks.Type a plugin serves, less New: Handle names it in calls.
type WireType struct {
	Handle       int               `json:"handle"`
	Name         string            `json:"name"`
	Summary      string            `json:"summary,omitempty"`
	Doc          string            `json:"doc,omitempty"`
	Outputs      []tasks.Output    `json:"outputs,omitempty"`
	Example      string            `json:"example,omitempty"`
	Undo         string            `json:"undo,omitempty"`
	UndoAttr     string            `json:"undo_attr,omitempty"`
	DestroyReads []string          `json:"destroy_reads,omitempty"`
	Refresh      string            `json:"refresh,omitempty"`
	Attributes   []tasks.Attribute `json:"attributes,omitempty"`
	// Destroys and Probes are the type's capabilities (tasks.Caps): flow's side of
	// the type implements tasks.Destroyer and tasks.Prober as they say.
	Destroys bool `json:"destroys,omitempty"`
	Probes   bool `json:"probes,omitempty"`
}

// WireValue is a cty value with its type; Sensitive says it was marked
// tasks.SensitiveMark.
type WireValue struct {
	JSON      json.RawMessage `json:"v"`
	Sensitive bool            `json:"s,omitempty"`
}

// EncodeValues encodes values with their types; marks are dropped but for
// tasks.SensitiveMark, which travels as Sensitive. An unknown value is an error.
func EncodeValues(values map[string]cty.Value) (map[string]WireValue, error) {
	out := make(map[string]WireValue, len(values))
	for name, v := range values {
		sensitive := v.ContainsMarked()
		plain, _ := v.UnmarkDeep()
		js, err := ctyjson.Marshal(plain, cty.DynamicPseudoType)
		if err != nil {
			return nil, fmt.Errorf("attribute %q: %w", name, err)
		}
		out[name] = WireValue{JSON: js, Sensitive: sensitive}
	}
	return out, nil
}

// DecodeValues decodes what EncodeValues wrote.
func DecodeValues(in map[string]WireValue) (map[string]cty.Value, error) {
	out := make(map[string]cty.Value, len(in))
	for name, wv := range in {
		v, err := ctyjson.Unmarshal(wv.JSON, cty.DynamicPseudoType)
		if err != nil {
			return nil, fmt.Errorf("value %q: %w", name, err)
		}
		if wv.Sensitive {
			v = v.Mark(tasks.SensitiveMark)
		}
		out[name] = v
	}
	return out, nil
}

// WireError is an error as the host returned it: its text, the attribute of a
// *tasks.AttrError, and whether it wraps the call's context's end.
type WireError struct {
	Msg  string `json:"msg"`
	Attr string `json:"attr,omitempty"`
	Ctx  string `json:"ctx,omitempty"` // "canceled" or "deadline"
}

// EncodeError is err for the wire (nil: nil).
func EncodeError(err error) *WireError {
	if err == nil {
		return nil
	}
	we := &WireError{Msg: err.Error()}
	if ae, ok := err.(*tasks.AttrError); ok {
		we.Attr, we.Msg = ae.Attr, ae.Err.Error()
	}
	switch {
	case errors.Is(err, context.Canceled):
		we.Ctx = "canceled"
	case errors.Is(err, context.DeadlineExceeded):
		we.Ctx = "deadline"
	}
	return we
}

// Error is the error we stands for: the same text, a *tasks.AttrError when it names
// an attribute, and errors.Is the context's error it wrapped.
func (we *WireError) Error() error {
	if we == nil {
		return nil
	}
	var err error = errors.New(we.Msg)
	switch we.Ctx {
	case "canceled":
		err = &ctxError{msg: we.Msg, err: context.Canceled}
	case "deadline":
		err = &ctxError{msg: we.Msg, err: context.DeadlineExceeded}
	}
	if we.Attr != "" {
		return &tasks.AttrError{Attr: we.Attr, Err: err}
	}
	return err
}

// ctxError is a host's error that wrapped its context's end.
type ctxError struct {
	msg string
	err error
}

func (e *ctxError) Error() string { return e.msg }
func (e *ctxError) Unwrap() error { return e.err }
