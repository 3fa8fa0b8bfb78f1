// Package sdk is how a flow task plugin is written in Go. A plugin is an executable
// that serves one or more task types; flow starts it (go-plugin, over gRPC on a unix
// socket), reads their schema and calls Validate, Check, Run, Probe and Destroy. Its
// main function is one call:
//
//	func main() {
//		sdk.Serve(sdk.Type{
//			Name:       "greeting",
//			Summary:    "Write a greeting to a file",
//			Attributes: []sdk.Attribute{{Name: "name", Type: sdk.String, Required: true}},
//			Outputs:    []sdk.Output{{Name: "text", Type: sdk.String}},
//			Run: func(ctx context.Context, t sdk.Task, env *sdk.Env) (sdk.Values, error) {
//				text := "hello, " + t.String("name")
//				fmt.Fprintln(env.Stdout, text)
//				return sdk.Values{"text": text}, nil
//			},
//		})
//	}
//
// This module depends on go-plugin, gRPC and protobuf only (and what they need); its
// version follows the protocol it speaks (ProtocolVersion). The protocol itself is
// proto/flowplugin.proto, generated into package pluginpb.
package sdk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
)

// ValueType is an attribute's or output's type in flow's type system (cty), written
// as cty's type JSON: String, Number, Bool, Dynamic, ListOf(String), ...
type ValueType string

// The primitive types, and Dynamic: any value.
const (
	String  ValueType = `"string"`
	Number  ValueType = `"number"`
	Bool    ValueType = `"bool"`
	Dynamic ValueType = `"dynamic"`
)

// ListOf is a list of elem; SetOf a set; MapOf a map with string keys.
func ListOf(elem ValueType) ValueType { return ValueType(`["list",` + string(elem) + `]`) }
func SetOf(elem ValueType) ValueType  { return ValueType(`["set",` + string(elem) + `]`) }
func MapOf(elem ValueType) ValueType  { return ValueType(`["map",` + string(elem) + `]`) }

// ObjectOf is an object with these attributes.
func ObjectOf(attrs map[string]ValueType) ValueType {
	raw := map[string]json.RawMessage{}
	for k, v := range attrs {
		raw[k] = json.RawMessage(v)
	}
	b, _ := json.Marshal(raw)
	return ValueType(`["object",` + string(b) + `]`)
}

// Attribute is one attribute of a task block.
type Attribute struct {
	Name     string
	Type     ValueType
	Required bool
	// Sensitive marks a secret (a token, a password): flow redacts it wherever it
	// prints and never stores it.
	Sensitive bool
	Doc       string
}

// Output is one output a task returns.
type Output struct {
	Name      string
	Type      ValueType
	Sensitive bool
	Doc       string
}

// Task is one task instance's attribute values, decoded from JSON: a string is a
// string, a number a float64, a bool a bool, a list []any, a map or object
// map[string]any; an attribute not set is nil (absent from the map).
type Task map[string]any

// String is attribute name as a string ("" when not set).
func (t Task) String(name string) string { s, _ := t[name].(string); return s }

// Number is attribute name as a float64 (0 when not set).
func (t Task) Number(name string) float64 { f, _ := t[name].(float64); return f }

// Bool is attribute name as a bool (false when not set).
func (t Task) Bool(name string) bool { b, _ := t[name].(bool); return b }

// Has reports whether attribute name is set.
func (t Task) Has(name string) bool { return t[name] != nil }

// Values are a task's outputs by name, as Run returns them and as the run recorded
// them: plain Go values that encode as JSON of the declared type.
type Values map[string]any

// Env is what a call gets besides its attributes: the instance's address and attempt,
// where it prints (flow prefixes, logs and redacts each line) and a logger to the
// plugin's stderr.
type Env struct {
	Address string
	Attempt int
	Stdout  io.Writer
	Stderr  io.Writer
	Log     *log.Logger
}

// State is the answer of a Check or a Probe.
type State int

const (
	// Absent: nothing is there. Check: Run creates it. Probe: it is gone.
	Absent State = iota
	// Present: Check: it is there as configured, Run is skipped. Probe: it is as
	// the run left it.
	Present
	// Differs: Check: something else is in the way, the attempt fails. Probe: it
	// changed since the run.
	Differs
)

// Answer is what Check or Probe found. Detail says what (shown after "already
// present", or as the drift in a plan); Outputs, for Check's Present, are what Run
// would have returned.
type Answer struct {
	State   State
	Detail  string
	Outputs Values
}

// Type is a task type a plugin serves. Name and Run are required; every other hook is
// optional and its absence is part of the schema flow reads.
type Type struct {
	Name    string
	Summary string // one line, for flow tasks
	Doc     string
	Example string // a complete task block
	// Attributes are the task block's attributes; Outputs what Run returns.
	Attributes []Attribute
	Outputs    []Output

	// Validate checks a task's attributes, fast and offline; return Invalid(attr,
	// ...) to name the attribute. flow calls it before anything runs.
	Validate func(t Task) error
	// Run does the work and returns the outputs. It must honour ctx (flow's Ctrl-C
	// and the task's timeout) and be idempotent: a resume may run it again.
	Run func(ctx context.Context, t Task, env *Env) (Values, error)
	// Check is asked before every Run: is what Run would make already there?
	Check func(ctx context.Context, t Task, env *Env) (Answer, error)
	// Probe is asked before a plan, resume or targeted run trusts a recorded
	// success: is the object still as the run left it (recorded: its outputs)?
	// Without Probe, flow asks Check; without both, a success is trusted.
	Probe func(ctx context.Context, t Task, env *Env, recorded Values) (Answer, error)
	// Destroy undoes what Run made, for flow destroy (recorded: the run's outputs,
	// nil when none were stored).
	Destroy func(ctx context.Context, t Task, env *Env, recorded Values) error

	// Undo says what flow destroy does with an instance (shown by flow tasks).
	Undo string
	// UndoAttr names an optional attribute that, left unset, means the instance
	// made nothing to undo: flow destroy leaves it alone.
	UndoAttr string
	// DestroyReads names every attribute Destroy reads: flow destroy then needs only
	// these known (a secret input is never stored) and does not call Validate.
	DestroyReads []string
}

// AttrError is an error about one attribute: flow points at that attribute in the
// flow file.
type AttrError struct {
	Attr string
	Err  error
}

func (e *AttrError) Error() string { return e.Attr + ": " + e.Err.Error() }
func (e *AttrError) Unwrap() error { return e.Err }

// Invalid is an *AttrError about attr.
func Invalid(attr, format string, args ...any) error {
	return &AttrError{Attr: attr, Err: fmt.Errorf(format, args...)}
}

// ErrorFields is err's message and, for an *AttrError, its attribute and the message
// without the attribute's prefix.
func ErrorFields(err error) (msg, attr string) {
	if err == nil {
		return "", ""
	}
	var ae *AttrError
	if errors.As(err, &ae) && ae.Error() == err.Error() {
		return ae.Err.Error(), ae.Attr
	}
	return err.Error(), ""
}
