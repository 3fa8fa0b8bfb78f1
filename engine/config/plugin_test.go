package config

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/flowdev/flow/tasks"
)

// fakeLoader serves the type "thing" for source "./thing" and fails otherwise.
type fakeLoader struct{}

type thing struct {
	Size int `hcl:"size" doc:"How big."`
}

func (*thing) Validate() error                                        { return nil }
func (*thing) Run(context.Context, *tasks.Env) (tasks.Outputs, error) { return nil, nil }

func (fakeLoader) Load(spec tasks.PluginSpec) (tasks.PluginUse, []tasks.Type, error) {
	if spec.Source != "./thing" {
		return tasks.PluginUse{}, nil, errors.New("no executable " + spec.Source)
	}
	use := tasks.PluginUse{Name: spec.Name, Path: filepath.Join(spec.Dir, "thing"), Sha256: "abc", Types: []string{"thing"}}
	return use, []tasks.Type{{Name: "thing", New: func() tasks.Task { return &thing{} },
		Outputs: []tasks.Output{{Name: "id", Type: cty.String}}}}, nil
}

func TestPluginBlocks(t *testing.T) {
	tests := []struct {
		name  string
		src   string
		diags []string // substrings of the error diagnostics, in order
	}{
		{name: "plugin type used", src: `plugin "p" { source = "./thing" }
task "thing" "a" { size = 3 }
task "thing" "b" { size = length(thing.a.id) }`},
		{name: "schema checked", src: `plugin "p" { source = "./thing" }
task "thing" "a" {
  size   = 3
  colour = "red"
}`, diags: []string{`An argument named "colour" is not expected here.`}},
		{name: "required attribute", src: `plugin "p" { source = "./thing" }
task "thing" "a" {}`, diags: []string{`The argument "size" is required`}},
		{name: "not found", src: `plugin "p" { source = "./nope" }
task "thing" "a" { size = 1 }`, diags: []string{`no executable ./nope.`}}, // not "unknown type" besides
		{name: "unknown type", src: `plugin "p" { source = "./thing" }
task "thin" "a" { size = 1 }`, diags: []string{`There is no task type "thin"`}},
		{name: "no source", src: `plugin "p" {}`, diags: []string{`The argument "source" is required`}},
		{name: "duplicate", src: `plugin "p" { source = "./thing" }
plugin "p" { source = "./thing" }`, diags: []string{`Plugin "p" is declared twice`}},
		{name: "type served twice", src: `plugin "p" { source = "./thing" }
plugin "q" { source = "./thing" }`, diags: []string{`plugin "q" serves the task type "thing", which plugin "p" serves already`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "flow.hcl"), []byte(tt.src), 0o644); err != nil {
				t.Fatal(err)
			}
			reg := tasks.NewRegistry()
			reg.SetPluginLoader(fakeLoader{})
			f, diags := Load(dir, reg)
			errs := diags.Errs()
			if len(errs) != len(tt.diags) {
				t.Fatalf("diagnostics %v, want %d", diags, len(tt.diags))
			}
			for i, want := range tt.diags {
				if !strings.Contains(errs[i].Error(), want) {
					t.Errorf("diagnostic %d = %v, want %q", i, errs[i], want)
				}
			}
			if len(tt.diags) == 0 && (len(f.Plugins) != 1 || f.Plugins[0].Sha256 != "abc") {
				t.Errorf("plugins %+v", f.Plugins)
			}
		})
	}
}

// Without a loader (a registry built by a test or a tool), a plugin block is an error.
func TestPluginBlockWithoutLoader(t *testing.T) {
	dir := t.TempDir()
	_ = os.WriteFile(filepath.Join(dir, "flow.hcl"), []byte(`plugin "p" { source = "./thing" }`), 0o644)
	_, diags := Load(dir, tasks.NewRegistry())
	if !diags.HasErrors() || !strings.Contains(diags.Error(), "this flow binary cannot start plugins") {
		t.Errorf("diagnostics %v", diags)
	}
}
