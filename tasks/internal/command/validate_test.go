package command_test

import (
	"context"
	"testing"

	"github.com/flowdev/flow/tasks"
	"github.com/flowdev/flow/tasks/internal/command"
	"github.com/flowdev/flow/tasks/taskstest"
)

// cmdTask is a task whose Validate is command.Validate, for the table runner.
type cmdTask struct {
	argv   []string
	script string
	env    map[string]string
}

func (c *cmdTask) Validate() error { return command.Validate(c.argv, c.script, c.env) }

func (c *cmdTask) Run(context.Context, *tasks.Env) (tasks.Outputs, error) { return nil, nil }

func TestValidate(t *testing.T) {
	taskstest.CheckValidate(t, []taskstest.ValidateCase{
		{Name: "command", Task: &cmdTask{argv: []string{"ls", "-l"}, env: map[string]string{"A": "1"}}},
		{Name: "script", Task: &cmdTask{script: "true"}},
		{Name: "neither", Task: &cmdTask{}, Attr: "command", Msg: "one of command or script is required"},
		{Name: "both", Task: &cmdTask{argv: []string{"ls"}, script: "ls"}, Attr: "script", Msg: "mutually exclusive; set only one"},
		{Name: "empty command", Task: &cmdTask{argv: []string{}}, Attr: "command", Msg: "must not be empty"},
		{Name: "empty program", Task: &cmdTask{argv: []string{""}}, Attr: "command", Msg: "first element (the program) must not be empty"},
		{Name: "env name with NUL", Task: &cmdTask{script: "true", env: map[string]string{"A\x00": "1"}}, Attr: "env", Msg: "no '=' or NUL"},
	})
}
