package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// archDoc is docs/architecture.md, from this package's directory.
var archDoc = filepath.Join("..", "..", "docs", "architecture.md")

// guidedPackages are the packages whose every non-test file the doc's file guide lists.
var guidedPackages = []string{"engine", "engine/ops", "engine/plan", "engine/walk", "engine/config", "engine/dag", "engine/live", "engine/state"}

// modulePrefix is what package paths are written without in the doc.
const modulePrefix = "github.com/flowdev/flow/"

// codePackage is a package as go list reports it: the packages of this repository its
// non-test files import, written without modulePrefix, and its directory.
type codePackage struct {
	imports []string
	dir     string
}

// TestArchitectureDoc keeps docs/architecture.md drawn from the code: its layers and
// package table name every package of the main module and of plugin/sdk (go list) and
// no other, each package's imports as they are, no import that runs back up a layer,
// and its file guide lists every non-test file of the engine packages.
func TestArchitectureDoc(t *testing.T) {
	doc, err := os.ReadFile(archDoc)
	if err != nil {
		t.Fatal(err)
	}
	pkgs := map[string]codePackage{}
	for _, dir := range []string{filepath.Join("..", ".."), filepath.Join("..", "..", "plugin", "sdk")} {
		if err := listPackages(dir, pkgs); err != nil {
			t.Fatal(err)
		}
	}
	files := map[string][]string{}
	for _, p := range guidedPackages {
		code, ok := pkgs[p]
		if !ok {
			t.Fatalf("go list has no package %s: fix guidedPackages in %s", p, "cmd/flow/architecture_test.go")
		}
		if files[p], err = goFiles(code.dir); err != nil {
			t.Fatal(err)
		}
	}
	for _, problem := range checkArchitecture(string(doc), pkgs, files) {
		t.Errorf("docs/architecture.md: %s", problem)
	}
}

// listPackages adds the packages of the module in dir to pkgs.
func listPackages(dir string, pkgs map[string]codePackage) error {
	cmd := exec.Command("go", "list", "-json", "./...")
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return fmt.Errorf("go list in %s: %w\n%s", dir, err, ee.Stderr)
		}
		return fmt.Errorf("go list in %s: %w", dir, err)
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p struct {
			ImportPath, Dir string
			Imports         []string
		}
		if err := dec.Decode(&p); err == io.EOF {
			return nil
		} else if err != nil {
			return fmt.Errorf("go list in %s: %w", dir, err)
		}
		var own []string
		for _, imp := range p.Imports {
			if rel, ok := strings.CutPrefix(imp, modulePrefix); ok {
				own = append(own, rel)
			}
		}
		pkgs[strings.TrimPrefix(p.ImportPath, modulePrefix)] = codePackage{imports: own, dir: p.Dir}
	}
}

// goFiles lists the non-test .go files in dir, whatever their build constraints.
func goFiles(dir string) ([]string, error) {
	names, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	var out []string
	for _, n := range names {
		if n = filepath.Base(n); !strings.HasSuffix(n, "_test.go") {
			out = append(out, n)
		}
	}
	return out, nil
}

// archSections are what the doc says, by section, each entry with its line number.
type archSections struct {
	layers  map[string]int      // package -> layer
	layerAt map[string]int      // package -> line
	table   map[string]docRow   // package -> its row in ## Packages
	guide   map[string]docFiles // package -> its ### section in ## File guide
}

type docRow struct {
	imports []string
	line    int
}

type docFiles struct {
	files map[string]int // file -> line
	line  int
}

var (
	layerLine = regexp.MustCompile(`^layer (\d+):`)
	backquote = regexp.MustCompile("`([^`]*)`")
)

// parseArchitecture reads the three machine-checked sections of doc: the package
// names under each "layer N:" line of ## Layers' code block, the rows of
// ## Packages' table (| `package` | owns | `import`, ... |) and, under each
// ### `package` heading of ## File guide, the rows | `file` | holds |.
func parseArchitecture(doc string) (*archSections, []string) {
	a := &archSections{layers: map[string]int{}, layerAt: map[string]int{}, table: map[string]docRow{}, guide: map[string]docFiles{}}
	var problems []string
	var section, guided string
	layer := 0
	sc := bufio.NewScanner(strings.NewReader(doc))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "## "):
			section, guided = strings.TrimPrefix(line, "## "), ""
			continue
		case strings.HasPrefix(line, "### ") && section == "File guide":
			m := backquote.FindStringSubmatch(line)
			if m == nil {
				problems = append(problems, fmt.Sprintf("line %d: a ### heading of ## File guide names its package in backquotes: ### `engine/state`", n))
				continue
			}
			guided = m[1]
			a.guide[guided] = docFiles{files: map[string]int{}, line: n}
			continue
		}
		switch section {
		case "Layers":
			if m := layerLine.FindStringSubmatch(line); m != nil {
				layer, _ = strconv.Atoi(m[1])
				continue
			}
			if layer == 0 || strings.HasPrefix(line, "```") || strings.TrimSpace(line) == "↓" {
				continue
			}
			for _, p := range strings.Fields(line) {
				if prev, dup := a.layerAt[p]; dup {
					problems = append(problems, fmt.Sprintf("line %d: ## Layers lists %s again (first at line %d): keep it in one layer", n, p, prev))
					continue
				}
				a.layers[p], a.layerAt[p] = layer, n
			}
		case "Packages":
			cells := rowCells(line)
			if len(cells) != 3 || !strings.HasPrefix(cells[0], "`") {
				continue
			}
			p := strings.Trim(cells[0], "`")
			if prev, dup := a.table[p]; dup {
				problems = append(problems, fmt.Sprintf("line %d: ## Packages has a second row for %s (first at line %d): remove one", n, p, prev.line))
				continue
			}
			var imports []string
			for _, m := range backquote.FindAllStringSubmatch(cells[2], -1) {
				imports = append(imports, m[1])
			}
			a.table[p] = docRow{imports: imports, line: n}
		case "File guide":
			cells := rowCells(line)
			if guided == "" || len(cells) != 2 || !strings.HasPrefix(cells[0], "`") {
				continue
			}
			a.guide[guided].files[strings.Trim(cells[0], "`")] = n
		}
	}
	return a, problems
}

// rowCells splits a markdown table row into its trimmed cells; nil if line is no row.
func rowCells(line string) []string {
	line = strings.TrimSpace(line)
	if !strings.HasPrefix(line, "|") || !strings.HasSuffix(line, "|") || len(line) < 2 {
		return nil
	}
	cells := strings.Split(line[1:len(line)-1], "|")
	for i := range cells {
		cells[i] = strings.TrimSpace(cells[i])
	}
	return cells
}

// checkArchitecture returns what doc says that pkgs (by go list) and files (the
// non-test files of each guided package) do not, each problem saying what to change.
func checkArchitecture(doc string, pkgs map[string]codePackage, files map[string][]string) []string {
	a, problems := parseArchitecture(doc)
	for _, p := range slices.Sorted(maps.Keys(pkgs)) {
		want := quoted(pkgs[p].imports)
		row, ok := a.table[p]
		if !ok {
			problems = append(problems, fmt.Sprintf("## Packages has no row for %s: add | `%s` | what it owns | %s |", p, p, want))
		} else if got := quoted(row.imports); got != want {
			problems = append(problems, fmt.Sprintf("line %d: ## Packages says %s imports %s; its code imports %s: write that in its imports cell", row.line, p, got, want))
		}
		layer, ok := a.layers[p]
		if !ok {
			problems = append(problems, fmt.Sprintf("## Layers puts %s in no layer: add it to the layer of the packages like it", p))
			continue
		}
		for _, imp := range pkgs[p].imports {
			if l, ok := a.layers[imp]; ok && l < layer {
				problems = append(problems, fmt.Sprintf("line %d: %s (layer %d) imports %s (layer %d), an import that runs back up: move one of them to another layer in ## Layers, or remove the import",
					a.layerAt[p], p, layer, imp, l))
			}
		}
	}
	for _, p := range slices.Sorted(maps.Keys(a.table)) {
		if _, ok := pkgs[p]; !ok {
			problems = append(problems, fmt.Sprintf("line %d: ## Packages has a row for %s, which go list does not list: remove the row or correct its path", a.table[p].line, p))
		}
	}
	for _, p := range slices.Sorted(maps.Keys(a.layers)) {
		if _, ok := pkgs[p]; !ok {
			problems = append(problems, fmt.Sprintf("line %d: ## Layers names %s, which go list does not list: remove it or correct its path", a.layerAt[p], p))
		}
	}
	for _, p := range slices.Sorted(maps.Keys(files)) {
		g, ok := a.guide[p]
		if !ok {
			problems = append(problems, fmt.Sprintf("## File guide has no section for %s: add ### `%s` and a table | file | holds | with a row for each of %s",
				p, p, strings.Join(files[p], ", ")))
			continue
		}
		for _, f := range files[p] {
			if _, ok := g.files[f]; !ok {
				problems = append(problems, fmt.Sprintf("line %d: ### `%s` of ## File guide has no row for %s: add | `%s` | what it holds |", g.line, p, f, f))
			}
		}
		for _, f := range slices.Sorted(maps.Keys(g.files)) {
			if !slices.Contains(files[p], f) {
				problems = append(problems, fmt.Sprintf("line %d: ## File guide lists %s/%s, which is not a non-test file of %s: remove the row or correct its name", g.files[f], p, f, p))
			}
		}
	}
	for _, p := range slices.Sorted(maps.Keys(a.guide)) {
		if _, ok := files[p]; !ok {
			problems = append(problems, fmt.Sprintf("line %d: ## File guide has a section for %s, which TestArchitectureDoc does not check: add it to guidedPackages in cmd/flow/architecture_test.go or remove the section", a.guide[p].line, p))
		}
	}
	return problems
}

// quoted is imports as the doc writes them: `a`, `b`; — for none.
func quoted(imports []string) string {
	if len(imports) == 0 {
		return "—"
	}
	s := slices.Clone(imports)
	slices.Sort(s)
	for i := range s {
		s[i] = "`" + s[i] + "`"
	}
	return strings.Join(s, ", ")
}

// A small doc that agrees with smallPackages and smallFiles, and what each change to
// it (or to the code) makes checkArchitecture say.
const smallDoc = "## Layers\n\n```text\nlayer 1: top\n  a\n    ↓\nlayer 2: bottom\n  b\n```\n\n" +
	"## Packages\n\n| package | owns | imports |\n|---|---|---|\n| `a` | the top | `b` |\n| `b` | the bottom | — |\n\n" +
	"## File guide\n\n### `b`\n\n| file | holds |\n|---|---|\n| `b.go` | all of b |\n"

var (
	smallPackages = map[string]codePackage{"a": {imports: []string{"b"}}, "b": {}}
	smallFiles    = map[string][]string{"b": {"b.go"}}
)

func TestCheckArchitecture(t *testing.T) {
	for _, tc := range []struct {
		name     string
		old, new string                 // replaced in smallDoc
		pkgs     map[string]codePackage // instead of smallPackages
		files    map[string][]string    // instead of smallFiles
		want     string                 // in the one problem; "" for none
	}{
		{name: "agrees"},
		{name: "package without a row", old: "| `b` | the bottom | — |\n", want: "## Packages has no row for b: add | `b` | what it owns | — |"},
		{name: "row of no package", old: "| `b` | the bottom | — |\n", new: "| `b` | the bottom | — |\n| `c` | gone | — |\n",
			want: "line 17: ## Packages has a row for c, which go list does not list"},
		{name: "second row", old: "| `b` | the bottom | — |\n", new: "| `b` | the bottom | — |\n| `b` | again | — |\n",
			want: "line 17: ## Packages has a second row for b (first at line 16)"},
		{name: "import not written", old: "| the top | `b` |", new: "| the top | — |",
			want: "line 15: ## Packages says a imports —; its code imports `b`"},
		{name: "import not made", pkgs: map[string]codePackage{"a": {}, "b": {}},
			want: "line 15: ## Packages says a imports `b`; its code imports —"},
		{name: "import runs back up", pkgs: map[string]codePackage{"a": {imports: []string{"b"}}, "b": {imports: []string{"a"}}},
			old: "| the bottom | — |", new: "| the bottom | `a` |", want: "b (layer 2) imports a (layer 1), an import that runs back up"},
		{name: "package in no layer", old: "  b\n", want: "## Layers puts b in no layer"},
		{name: "package in two layers", old: "  b\n", new: "  b a\n", want: "line 8: ## Layers lists a again (first at line 5)"},
		{name: "layer names no package", old: "  b\n", new: "  b c\n", want: "line 8: ## Layers names c, which go list does not list"},
		{name: "file without a row", files: map[string][]string{"b": {"b.go", "c.go"}},
			want: "### `b` of ## File guide has no row for c.go: add | `c.go` | what it holds |"},
		{name: "row of no file", files: map[string][]string{"b": {}}, want: "## File guide lists b/b.go, which is not a non-test file of b"},
		{name: "guided package without a section", files: map[string][]string{"a": {"a.go"}, "b": {"b.go"}},
			want: "## File guide has no section for a: add ### `a`"},
		{name: "section of an unguided package", files: map[string][]string{}, want: "## File guide has a section for b, which TestArchitectureDoc does not check"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := smallDoc
			if tc.old != "" {
				if !strings.Contains(doc, tc.old) {
					t.Fatalf("smallDoc has no %q", tc.old)
				}
				doc = strings.Replace(doc, tc.old, tc.new, 1)
			}
			pkgs, files := smallPackages, smallFiles
			if tc.pkgs != nil {
				pkgs = tc.pkgs
			}
			if tc.files != nil {
				files = tc.files
			}
			problems := checkArchitecture(doc, pkgs, files)
			switch {
			case tc.want == "" && len(problems) > 0:
				t.Errorf("problems in a doc that agrees: %q", problems)
			case tc.want != "" && (len(problems) != 1 || !strings.Contains(problems[0], tc.want)):
				t.Errorf("problems: %q; want one containing %q", problems, tc.want)
			}
		})
	}
}
