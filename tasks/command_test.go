package tasks_test

import (
	"context"
	"testing"

	"github.com/flowdev/flow/tasks"
	"github.com/flowdev/flow/tasks/taskstest"
)

// command is a task whose Validate is ValidateCommand's, for the table runner.
type command struct {
	argv   []string
	script string
	env    map[string]string
}

func (c *command) Validate() error { return tasks.ValidateCommand(c.argv, c.script, c.env) }

func (c *command) Run(context.Context, *tasks.Env) (tasks.Outputs, error) { return nil, nil }

func TestValidateCommand(t *testing.T) {
	taskstest.CheckValidate(t, []taskstest.ValidateCase{
		{Name: "command", Task: &command{argv: []string{"ls", "-l"}, env: map[string]string{"A": "1"}}},
		{Name: "script", Task: &command{script: "true"}},
		{Name: "neither", Task: &command{}, Attr: "command", Msg: "one of command or script is required"},
		{Name: "both", Task: &command{argv: []string{"ls"}, script: "ls"}, Attr: "script", Msg: "mutually exclusive; set only one"},
		{Name: "empty command", Task: &command{argv: []string{}}, Attr: "command", Msg: "must not be empty"},
		{Name: "empty program", Task: &command{argv: []string{""}}, Attr: "command", Msg: "first element (the program) must not be empty"},
		{Name: "env name with NUL", Task: &command{script: "true", env: map[string]string{"A\x00": "1"}}, Attr: "env", Msg: "no '=' or NUL"},
	})
}
