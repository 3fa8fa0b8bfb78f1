package taskstest

import (
	"errors"
	"strings"
	"testing"

	"github.com/flowdev/flow/tasks"
)

// ValidateCase is one row of a table-driven Validate test. An empty Attr means Task
// must be valid; otherwise Validate must return a *tasks.AttrError on Attr whose
// message contains Msg.
type ValidateCase struct {
	Name string
	Task tasks.Task
	Attr string
	Msg  string
}

// CheckValidate runs each case as a subtest.
func CheckValidate(t *testing.T, cases []ValidateCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			err := c.Task.Validate()
			if c.Attr == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			var ae *tasks.AttrError
			if !errors.As(err, &ae) {
				t.Fatalf("Validate() = %v, want *tasks.AttrError on %q", err, c.Attr)
			}
			if ae.Attr != c.Attr || !strings.Contains(ae.Err.Error(), c.Msg) {
				t.Errorf("Validate() = %q on %q, want %q on %q", ae.Err, ae.Attr, c.Msg, c.Attr)
			}
		})
	}
}
