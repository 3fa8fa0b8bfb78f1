package tasks

import (
	"errors"
	"fmt"
	"time"
)

// Duration is an attribute written as a Go duration such as "500ms", "90s" or "1h30m";
// "" is unset. Its HCL type is string. Decode rejects a Duration that does not parse
// or is negative with an *AttrError, which the engine reports on the attribute's
// range, so a task reads it with Or, or with Positive where zero makes no sense.
type Duration string

// Parse returns the duration, 0 when unset.
func (d Duration) Parse() (time.Duration, error) {
	v, err := d.parse()
	if err == nil && v < 0 {
		return 0, fmt.Errorf("%q must not be negative", string(d))
	}
	return v, err
}

// parse is the one place a duration attribute is parsed.
func (d Duration) parse() (time.Duration, error) {
	if d == "" {
		return 0, nil
	}
	v, err := time.ParseDuration(string(d))
	if err != nil {
		return 0, fmt.Errorf(`%q is not a duration such as "90s" or "5m"`, string(d))
	}
	return v, nil
}

// Or returns the duration, or def when it is unset or malformed (Decode rejects a
// malformed one before a task runs).
func (d Duration) Or(def time.Duration) time.Duration {
	v, err := d.Parse()
	if d == "" || err != nil {
		return def
	}
	return v
}

// Positive returns the duration, or def when unset, and an *AttrError naming attr
// unless it is a duration above zero.
func (d Duration) Positive(attr string, def time.Duration) (time.Duration, error) {
	v, err := d.parse()
	switch {
	case err != nil:
		return 0, &AttrError{Attr: attr, Err: err}
	case d == "":
		v = def
	}
	if v <= 0 {
		return 0, &AttrError{Attr: attr, Err: errors.New(`must be a positive duration such as "90s" or "5m"`)}
	}
	return v, nil
}
