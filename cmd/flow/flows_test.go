package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowdev/flow/cmd/flow/cli"
)

// Every flow we ship validates (parse, plan, type check, each task's Validate) with
// the registry flow ships, with its default variables and with each var file kept
// beside it (flows/DIR/*.vars.hcl is used with flows/*.hcl of the same stem).
func TestShippedFlowsValidate(t *testing.T) {
	flows, err := filepath.Glob(filepath.Join("..", "..", "flows", "*.hcl"))
	if err != nil || len(flows) == 0 {
		t.Fatalf("no shipped flows found: %v", err)
	}
	varFiles, _ := filepath.Glob(filepath.Join("..", "..", "flows", "*", "*.vars.hcl"))
	for _, path := range flows {
		cases := [][]string{{"validate", path}}
		stem := strings.TrimSuffix(filepath.Base(path), ".hcl")
		for _, vf := range varFiles {
			if strings.HasPrefix(filepath.Base(vf), stem+".") {
				cases = append(cases, []string{"validate", path, "--var-file", vf})
			}
		}
		for _, args := range cases {
			t.Run(strings.Join(args[1:], " "), func(t *testing.T) {
				reg, err := registry()
				if err != nil {
					t.Fatal(err)
				}
				var stdout, stderr bytes.Buffer
				if err := cli.New(reg, &stdout, &stderr).Execute(args); err != nil {
					t.Errorf("flow %s: %v\n%s%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
				}
			})
		}
	}
}

// Every shipped module validates on its own too, its variables unknown, so a module no
// shipped flow calls yet (one made for the lab flows to adopt) is checked as well.
func TestShippedModulesValidate(t *testing.T) {
	modules, err := filepath.Glob(filepath.Join("..", "..", "flows", "modules", "*"))
	if err != nil || len(modules) == 0 {
		t.Fatalf("no shipped modules found: %v", err)
	}
	for _, dir := range modules {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			reg, err := registry()
			if err != nil {
				t.Fatal(err)
			}
			var stdout, stderr bytes.Buffer
			if err := cli.New(reg, &stdout, &stderr).Execute([]string{"validate", dir}); err != nil {
				t.Errorf("flow validate %s: %v\n%s%s", dir, err, stdout.String(), stderr.String())
			}
		})
	}
}
