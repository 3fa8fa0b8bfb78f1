package karmada

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/flowdev/flow/tasks"
)

// kind says how an attribute's value becomes a flag, and which Go type its field has.
type kind int

const (
	kindString   kind = iota // string: --flag=VALUE unless empty
	kindBool                 // bool: --flag when true
	kindInt                  // int: --flag=N unless 0
	kindList                 // []string: --flag=a,b,c unless empty (pflag StringSlice)
	kindRepeated             // []string: --flag=a --flag=b (pflag StringArray)
	kindDuration             // tasks.Duration: --flag=DURATION unless empty
	kindSeconds              // tasks.Duration: --flag=SECONDS unless empty, for int flags in seconds
)

// goType is the field type an attribute of kind k must have.
func (k kind) goType() reflect.Type {
	switch k {
	case kindBool:
		return reflect.TypeOf(false)
	case kindInt:
		return reflect.TypeOf(0)
	case kindList, kindRepeated:
		return reflect.TypeOf([]string(nil))
	case kindDuration, kindSeconds:
		return reflect.TypeOf(tasks.Duration(""))
	default:
		return reflect.TypeOf("")
	}
}

// flag maps one attribute to one karmadactl flag.
type flag struct {
	attr string // hcl attribute name
	name string // flag name without dashes
	kind kind
}

// flagTable is every flag one task type may emit. Nothing else is ever passed
// to karmadactl but the subcommand, its positional arguments and extra_args.
type flagTable []flag

// args renders the flags of the attributes set in task, a pointer to an
// hcl-tagged struct, in table order. Durations must have passed Validate.
func (t flagTable) args(task any) []string {
	fields := fieldsByAttr(task)
	var out []string
	for _, f := range t {
		v, ok := fields[f.attr]
		if !ok {
			panic(fmt.Sprintf("flag table: %T has no attribute %q", task, f.attr)) // caught by the tests
		}
		out = append(out, f.render(v)...)
	}
	return out
}

func (f flag) render(v reflect.Value) []string {
	opt := "--" + f.name
	switch f.kind {
	case kindBool:
		if v.Bool() {
			return []string{opt}
		}
	case kindInt:
		if v.Int() != 0 {
			return []string{opt + "=" + strconv.FormatInt(v.Int(), 10)}
		}
	case kindList:
		if v.Len() > 0 {
			return []string{opt + "=" + strings.Join(v.Interface().([]string), ",")}
		}
	case kindRepeated:
		var out []string
		for _, s := range v.Interface().([]string) {
			out = append(out, opt+"="+s)
		}
		return out
	case kindSeconds:
		if v.String() != "" {
			d := tasks.Duration(v.String()).Or(0)
			return []string{opt + "=" + strconv.FormatInt(int64(d/time.Second), 10)}
		}
	default: // kindString, kindDuration
		if v.String() != "" {
			return []string{opt + "=" + v.String()}
		}
	}
	return nil
}

// validate checks the duration attributes of task and that extra (extra_args)
// sets no flag the table maps, whose attribute must be used instead, and none
// of reserved, which flow sets itself. It returns nil or an *AttrError.
func (t flagTable) validate(task any, extra []string, reserved ...string) error {
	if err := t.validateDurations(task); err != nil {
		return err
	}
	return t.validateExtraArgs(extra, reserved)
}

func (t flagTable) validateDurations(task any) error {
	fields := fieldsByAttr(task)
	for _, f := range t {
		s := fields[f.attr].String()
		if (f.kind != kindDuration && f.kind != kindSeconds) || s == "" {
			continue
		}
		d, err := tasks.Duration(s).Parse()
		switch {
		case err != nil:
			return &tasks.AttrError{Attr: f.attr, Err: err}
		case f.kind == kindSeconds && d%time.Second != 0:
			return attrErr(f.attr, "%q must be whole seconds (--%s takes seconds)", s, f.name)
		}
	}
	return nil
}

// validateExtraArgs names only the flag of an offending argument: its value may
// be a secret (--token=...).
func (t flagTable) validateExtraArgs(extra, reserved []string) error {
	for _, arg := range extra {
		if arg == "" {
			return attrErr("extra_args", "arguments must not be empty")
		}
		if !strings.HasPrefix(arg, "--") {
			continue
		}
		name, _, _ := strings.Cut(arg[2:], "=")
		for _, f := range t {
			if f.name == name {
				return attrErr("extra_args", "--%s: set attribute %s instead", name, f.attr)
			}
		}
		if slices.Contains(reserved, name) {
			return attrErr("extra_args", "--%s: flow sets it itself", name)
		}
	}
	return nil
}

// attrErr is a Validate error on attribute attr.
func attrErr(attr, format string, args ...any) error {
	return &tasks.AttrError{Attr: attr, Err: fmt.Errorf(format, args...)}
}

// fieldsByAttr returns the hcl-tagged fields of the struct task points to, by
// attribute name.
func fieldsByAttr(task any) map[string]reflect.Value {
	rv := reflect.ValueOf(task).Elem()
	fields := map[string]reflect.Value{}
	for i := 0; i < rv.NumField(); i++ {
		name, _, _ := strings.Cut(rv.Type().Field(i).Tag.Get("hcl"), ",")
		if name != "" {
			fields[name] = rv.Field(i)
		}
	}
	return fields
}
