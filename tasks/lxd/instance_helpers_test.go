package lxd

import (
	"strings"
	"testing"

	"github.com/flowdev/flow/tasks"
	"github.com/zclconf/go-cty/cty"
)

// launchTestInstance starts a fresh busybox container, deleted when the test
// ends.
func launchTestInstance(t *testing.T) string {
	t.Helper()
	name := testName("b")
	deleteInstanceAtCleanup(t, name)
	lxc(t, "launch", testImage(t), name)
	return name
}

// inside runs a shell script in instance with the lxc CLI and returns its
// trimmed output.
func inside(t *testing.T, instance, script string) string {
	t.Helper()
	return strings.TrimSpace(lxc(t, "exec", instance, "--", "sh", "-c", script))
}

func outStr(t *testing.T, out tasks.Outputs, name string) string {
	t.Helper()
	v, ok := out[name]
	if !ok || v.Type() != cty.String {
		t.Fatalf("output %q = %#v, want a string", name, v)
	}
	return v.AsString()
}

func outNum(t *testing.T, out tasks.Outputs, name string) int64 {
	t.Helper()
	v, ok := out[name]
	if !ok || v.Type() != cty.Number {
		t.Fatalf("output %q = %#v, want a number", name, v)
	}
	n, _ := v.AsBigFloat().Int64()
	return n
}
