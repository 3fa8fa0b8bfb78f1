package command

import (
	"errors"
	"strings"

	"github.com/flowdev/flow/tasks"
)

// Validate checks the command, script and env attributes shared by the task
// types that run a program (exec, lxd_exec): exactly one of command and script is set,
// a command names its program first, and env names are non-empty and contain no '='
// or NUL. A nil command means "not set"; an empty one is an error. It returns nil or an
// *AttrError on "command", "script" or "env".
func Validate(command []string, script string, env map[string]string) error {
	switch {
	case command != nil && script != "":
		return &tasks.AttrError{Attr: "script", Err: errors.New("command and script are mutually exclusive; set only one")}
	case command == nil && script == "":
		return &tasks.AttrError{Attr: "command", Err: errors.New("one of command or script is required")}
	case command != nil && len(command) == 0:
		return &tasks.AttrError{Attr: "command", Err: errors.New("must not be empty")}
	case command != nil && command[0] == "":
		return &tasks.AttrError{Attr: "command", Err: errors.New("first element (the program) must not be empty")}
	}
	for name := range env {
		if name == "" || strings.ContainsAny(name, "=\x00") {
			return &tasks.AttrError{Attr: "env", Err: errors.New("variable names must be non-empty and contain no '=' or NUL")}
		}
	}
	return nil
}
