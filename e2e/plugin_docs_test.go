package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// docBlocks are the fenced code blocks of docs/plugins.md in lang.
func docBlocks(t *testing.T, root, lang string) []string {
	t.Helper()
	doc := readFile(t, filepath.Join(root, "docs", "plugins.md"))
	var out []string
	for _, m := range regexp.MustCompile("(?s)```"+lang+"\n(.*?)```").FindAllStringSubmatch(doc, -1) {
		out = append(out, m[1])
	}
	return out
}

// docBlock is the one block in lang that holds marker.
func docBlock(t *testing.T, root, lang, marker string) string {
	t.Helper()
	for _, b := range docBlocks(t, root, lang) {
		if strings.Contains(b, marker) {
			return b
		}
	}
	t.Fatalf("docs/plugins.md has no %s block with %q", lang, marker)
	return ""
}

// TestPluginDocs: the walkthroughs of docs/plugins.md run as written: the Python
// plugin (with flow_plugin beside it, and from the page's PYTHONPATH) and the Go one (the page's shell blocks run
// verbatim: its own module, built offline), each through the page's flow and commands.
func TestPluginDocs(t *testing.T) {
	needPython(t)
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	flowFile := docBlock(t, root, "hcl", `plugin "greeting"`)
	for _, lang := range []string{"python", "python-pythonpath", "go"} {
		t.Run(lang, func(t *testing.T) {
			dir := t.TempDir()
			write := func(name, content string, mode os.FileMode) {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(content), mode); err != nil {
					t.Fatal(err)
				}
			}
			write("flow.hcl", flowFile, 0o644)
			switch lang {
			case "python":
				write("flow-plugin-greeting", docBlock(t, root, "python", "#!/usr/bin/python3"), 0o755)
				if err := os.Symlink(filepath.Join(root, "plugins", "python", "flow_plugin"), filepath.Join(dir, "flow_plugin")); err != nil {
					t.Fatal(err)
				}
			case "python-pythonpath":
				// flow_plugin from PYTHONPATH, as the page's block sets it (Debian 12's
				// python refuses pip install: PEP 668), nothing beside the plugin.
				write("flow-plugin-greeting", docBlock(t, root, "python", "#!/usr/bin/python3"), 0o755)
				block := strings.ReplaceAll(docBlock(t, root, "sh", "export PYTHONPATH="), "/path/to/flow", root)
				out, err := exec.Command("sh", "-ec", block+"\nprintf %s \"$PYTHONPATH\"").Output()
				if err != nil || len(out) == 0 {
					t.Fatalf("%s: %v %q", block, err, out)
				}
				t.Setenv("PYTHONPATH", string(out))
			default:
				// As the page says: its shell blocks run verbatim, flow's checkout for
				// /path/to/flow, the build offline as written (GOPROXY=off).
				sh := func(dir, block string) {
					t.Helper()
					cmd := exec.Command("sh", "-ec", strings.ReplaceAll(block, "/path/to/flow", root))
					cmd.Dir = dir
					cmd.Env = append(os.Environ(), "GOWORK=off")
					if out, err := cmd.CombinedOutput(); err != nil {
						t.Fatalf("%s: %v\n%s", block, err, out)
					}
				}
				sh(dir, docBlock(t, root, "sh", "cat > go.mod"))
				dir = filepath.Join(dir, "flow-plugin-greeting")
				write("main.go", docBlock(t, root, "go", "package main"), 0o644)
				write("flow.hcl", flowFile, 0o644)
				sh(dir, docBlock(t, root, "sh", "GOPROXY=off go build"))
			}
			tag := newTag(t)
			flowExit(t, tag, dir, 0, "validate", "flow.hcl")
			for _, want := range []string{"[greeting.world] wrote hello.txt", "[greeting.world] already present (hello.txt)"} {
				if r := flowExit(t, tag, dir, 0, "run", "flow.hcl"); !strings.Contains(r.stdout, want) {
					t.Errorf("flow run: want %q\n%s", want, r.desc)
				}
			}
			if got := readFile(t, filepath.Join(dir, "hello.txt")); got != "hello, world\n" {
				t.Errorf("hello.txt = %q", got)
			}
			r := runFlow(t, tag, dir, 60*time.Second, "destroy", "--auto-approve")
			if _, err := os.Stat(filepath.Join(dir, "hello.txt")); r.code != 0 || !os.IsNotExist(err) {
				t.Errorf("destroy: hello.txt %v\n%s", err, r.desc)
			}
		})
	}
}
