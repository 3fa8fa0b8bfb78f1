// flow-plugin-kvfile is a flow task plugin written outside flow's repository, on the
// SDK module github.com/flowdev/flow/plugin/sdk alone. It serves kv_file: write
// key=value lines to a file; already present when the file holds exactly those;
// drifted when the file changed since the run; removed by flow destroy.
//
// Build it as any Go program: go build -o flow-plugin-kvfile .
package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/flowdev/flow/plugin/sdk"
)

func main() {
	sdk.Serve(sdk.Type{
		Name:    "kv_file",
		Summary: "Write key=value lines to a file (a Go plugin)",
		Doc:     "Writes one key=value line per entry of values, sorted by key, to path. flow destroy removes the file.",
		Example: `task "kv_file" "env" {
  path   = "app.env"
  values = { PORT = "8080", MODE = "prod" }
}`,
		Attributes: []sdk.Attribute{
			{Name: "path", Type: sdk.String, Required: true, Doc: "File to write, relative to where flow runs."},
			{Name: "values", Type: sdk.MapOf(sdk.String), Required: true, Doc: "The lines to write."},
		},
		Outputs: []sdk.Output{
			{Name: "path", Type: sdk.String, Doc: "The file written."},
			{Name: "sha256", Type: sdk.String, Doc: "Hex sha256 of what the file holds."},
		},
		Validate: validate,
		Check:    check,
		Probe:    probe,
		Run:      run,
		Destroy:  destroy,
		Undo:     "flow destroy removes the file.",
	})
}

func validate(t sdk.Task) error {
	path := t.String("path")
	if path == "" || filepath.IsAbs(path) || strings.Contains(path, "..") {
		return sdk.Invalid("path", "%q must be a relative path without ..", path)
	}
	values, _ := t["values"].(map[string]any)
	for k := range values {
		if k == "" || strings.ContainsAny(k, "=\n") {
			return sdk.Invalid("values", "key %q must be non-empty, without = or a newline", k)
		}
	}
	return nil
}

// render is the file's content: the lines sorted by key.
func render(t sdk.Task) []byte {
	values, _ := t["values"].(map[string]any)
	keys := make([]string, 0, len(values))
	for k := range values {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%v\n", k, values[k])
	}
	return []byte(b.String())
}

func outputs(path string, data []byte) sdk.Values {
	sum := sha256.Sum256(data)
	return sdk.Values{"path": path, "sha256": hex.EncodeToString(sum[:])}
}

// check: before a run, a file that holds exactly these lines is already present.
func check(_ context.Context, t sdk.Task, _ *sdk.Env) (sdk.Answer, error) {
	want := render(t)
	have, err := os.ReadFile(t.String("path"))
	if err != nil || string(have) != string(want) {
		return sdk.Answer{State: sdk.Absent}, nil // missing or other content: Run (re)writes it
	}
	return sdk.Answer{State: sdk.Present, Detail: t.String("path"), Outputs: outputs(t.String("path"), want)}, nil
}

// probe: after a run, the file must still hold what the run wrote.
func probe(_ context.Context, t sdk.Task, _ *sdk.Env, recorded sdk.Values) (sdk.Answer, error) {
	have, err := os.ReadFile(t.String("path"))
	if errors.Is(err, fs.ErrNotExist) {
		return sdk.Answer{State: sdk.Absent, Detail: t.String("path") + " was removed"}, nil
	}
	if err != nil {
		return sdk.Answer{}, err
	}
	if recorded != nil && outputs("", have)["sha256"] != recorded["sha256"] {
		return sdk.Answer{State: sdk.Differs, Detail: t.String("path") + " was changed since the run wrote it"}, nil
	}
	return sdk.Answer{State: sdk.Present}, nil
}

func run(_ context.Context, t sdk.Task, env *sdk.Env) (sdk.Values, error) {
	path, data := t.String("path"), render(t)
	if err := os.WriteFile(path+".tmp", data, 0o644); err != nil {
		return nil, err
	}
	if err := os.Rename(path+".tmp", path); err != nil {
		return nil, err
	}
	fmt.Fprintf(env.Stdout, "wrote %s (%d lines)\n", path, strings.Count(string(data), "\n"))
	return outputs(path, data), nil
}

func destroy(_ context.Context, t sdk.Task, env *sdk.Env, _ sdk.Values) error {
	err := os.Remove(t.String("path"))
	if errors.Is(err, fs.ErrNotExist) {
		fmt.Fprintf(env.Stdout, "%s already gone\n", t.String("path"))
		return nil
	}
	if err == nil {
		fmt.Fprintf(env.Stdout, "removed %s\n", t.String("path"))
	}
	return err
}
