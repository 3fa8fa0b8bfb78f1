package state

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/zclconf/go-cty/cty"
	ctyjson "github.com/zclconf/go-cty/cty/json"
)

// Value is a cty value together with its type, both in cty's JSON encoding
// (ctyjson.MarshalType and ctyjson.Marshal), so that outputs and variables
// keep their exact types across a resume.
//
// The zero Value holds nothing: Decode returns an error for it, and Commit,
// CreateRun and PutRun reject records that contain one. Value is a plain
// value type; copies share the underlying byte slices, which must not be
// modified.
type Value struct {
	Type  json.RawMessage `json:"type"`
	Value json.RawMessage `json:"value"`
}

// EncodeValue encodes v with its type.
//
// v must be non-nil, carry no marks (in particular no sensitive mark: secrets
// are never written to the state file) and be wholly known; otherwise
// EncodeValue returns an error and a zero Value. Capsule types cannot be
// encoded either. EncodeValue is safe for concurrent use.
func EncodeValue(v cty.Value) (Value, error) {
	if v == cty.NilVal {
		return Value{}, errors.New("encode value: nil value")
	}
	if v.ContainsMarked() {
		return Value{}, errors.New("encode value: value is marked (for example sensitive) and may not be stored")
	}
	if !v.IsWhollyKnown() {
		return Value{}, errors.New("encode value: value is not wholly known")
	}
	ty := v.Type()
	tj, err := ctyjson.MarshalType(ty)
	if err != nil {
		return Value{}, fmt.Errorf("encode type %s: %w", ty.FriendlyName(), err)
	}
	vj, err := ctyjson.Marshal(v, ty)
	if err != nil {
		return Value{}, fmt.Errorf("encode value of type %s: %w", ty.FriendlyName(), err)
	}
	return Value{Type: tj, Value: vj}, nil
}

// Decode returns the cty value v holds, of exactly the type it was encoded
// with. It returns cty.NilVal and an error if v is the zero Value or does not
// hold a valid encoding. Decode does not modify v and is safe for concurrent
// use.
func (v Value) Decode() (cty.Value, error) {
	if len(v.Type) == 0 {
		return cty.NilVal, errors.New("decode value: missing type")
	}
	if len(v.Value) == 0 {
		return cty.NilVal, errors.New("decode value: missing value")
	}
	ty, err := ctyjson.UnmarshalType(v.Type)
	if err != nil {
		return cty.NilVal, fmt.Errorf("decode value type: %w", err)
	}
	val, err := ctyjson.Unmarshal(v.Value, ty)
	if err != nil {
		return cty.NilVal, fmt.Errorf("decode value of type %s: %w", ty.FriendlyName(), err)
	}
	return val, nil
}

// check reports whether v can be stored: both parts present and valid JSON.
func (v Value) check() error {
	switch {
	case len(v.Type) == 0:
		return errors.New("missing type")
	case len(v.Value) == 0:
		return errors.New("missing value")
	case !json.Valid(v.Type):
		return errors.New("type is not valid JSON")
	case !json.Valid(v.Value):
		return errors.New("value is not valid JSON")
	}
	return nil
}

// checkValues checks every value of a map; what names the map in errors.
func checkValues(what string, m map[string]Value) error {
	for name, v := range m {
		if err := v.check(); err != nil {
			return fmt.Errorf("%s %q: %w", what, name, err)
		}
	}
	return nil
}
