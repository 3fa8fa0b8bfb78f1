package bridge

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/flowdev/flow/tasks"
)

func TestValuesRoundTrip(t *testing.T) {
	in := map[string]cty.Value{
		"s":      cty.StringVal("x"),
		"n":      cty.NumberIntVal(3),
		"null":   cty.NullVal(cty.String),
		"list":   cty.ListVal([]cty.Value{cty.StringVal("a")}),
		"obj":    cty.ObjectVal(map[string]cty.Value{"k": cty.True}),
		"secret": cty.StringVal("s3cret").Mark(tasks.SensitiveMark),
	}
	wire, err := EncodeValues(in)
	if err != nil {
		t.Fatal(err)
	}
	out, err := DecodeValues(wire)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range in {
		if got := out[name]; !got.RawEquals(want) {
			t.Errorf("%s: got %#v, want %#v", name, got, want)
		}
	}
	if _, err := EncodeValues(map[string]cty.Value{"u": cty.UnknownVal(cty.String)}); err == nil || !strings.Contains(err.Error(), `attribute "u"`) {
		t.Errorf("an unknown value: %v", err)
	}
}

func TestErrorRoundTrip(t *testing.T) {
	tests := []struct {
		name     string
		err      error
		attr     string
		isCancel bool
		isDead   bool
	}{
		{name: "nil"},
		{name: "plain", err: errors.New("plugin \"m\" exited during run: boom")},
		{name: "attribute", err: &tasks.AttrError{Attr: "path", Err: errors.New("must be relative")}, attr: "path"},
		{name: "cancelled", err: fmt.Errorf("plugin \"m\": run: %w", context.Canceled), isCancel: true},
		{name: "deadline", err: fmt.Errorf("run: %w", context.DeadlineExceeded), isDead: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := EncodeError(tt.err).Error()
			if tt.err == nil {
				if got != nil {
					t.Fatalf("got %v for nil", got)
				}
				return
			}
			if got.Error() != tt.err.Error() {
				t.Errorf("text %q, want %q", got, tt.err)
			}
			var ae *tasks.AttrError
			if errors.As(got, &ae) != (tt.attr != "") || (ae != nil && ae.Attr != tt.attr) {
				t.Errorf("attribute error %v, want attribute %q", ae, tt.attr)
			}
			if errors.Is(got, context.Canceled) != tt.isCancel || errors.Is(got, context.DeadlineExceeded) != tt.isDead {
				t.Errorf("%v: context errors lost", got)
			}
		})
	}
}

// TestLoadWithoutHost: without flow-plugin-host next to the executable or on PATH,
// a plugin's load says where it looked.
func TestLoadWithoutHost(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	self, _ = filepath.EvalSymlinks(self)
	l := NewLoader()
	defer l.Close()
	_, _, err = l.Load(tasks.PluginSpec{Name: "m", Source: "./m"})
	if err == nil {
		t.Fatal("loaded without a host")
	}
	for _, want := range []string{`plugin "m"`, HostName, filepath.Dir(self), "nor on PATH"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not say %q", err, want)
		}
	}
}
