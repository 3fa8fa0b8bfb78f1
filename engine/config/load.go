package config

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"

	"github.com/flowdev/flow/tasks"
)

var rootSchema = &hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{
	{Type: "variable", LabelNames: []string{"name"}},
	{Type: "locals"},
	{Type: "task", LabelNames: []string{"type", "name"}},
	{Type: "output", LabelNames: []string{"name"}},
	{Type: "module", LabelNames: []string{"name"}},
	{Type: "plugin", LabelNames: []string{"name"}},
}}

// Load reads the flow at path, a .hcl file or a directory of them, and checks it
// statically against reg: block structure, each task's attributes against its type's
// schema, and every reference. It returns all diagnostics, not just the first, and a
// Flow whenever the files could be parsed, so callers can still print sources.
// Its tasks act in the process's working directory (see LoadIn).
func Load(path string, reg *tasks.Registry) (*Flow, hcl.Diagnostics) {
	return LoadIn(path, "", reg)
}

// LoadIn is Load for a flow whose tasks act in workDir (a run's recorded directory):
// path.cwd is workDir and the flow's plugins start there. "" means the process's
// working directory.
func LoadIn(path, workDir string, reg *tasks.Registry) (*Flow, hcl.Diagnostics) {
	if workDir == "" {
		workDir, _ = os.Getwd()
	}
	return load(path, workDir, reg, nil)
}

// load reads the flow or module at path, whose tasks act in workDir; stack lists the
// module directories being loaded by the calls that lead here.
func load(path, workDir string, reg *tasks.Registry, stack []string) (*Flow, hcl.Diagnostics) {
	files, dir, err := flowFiles(path)
	if err != nil {
		return nil, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Cannot read flow", Detail: err.Error()}}
	}
	// Absolute, so "${path.flow}/x" works in file() (which resolves against Dir) and
	// evaluates the same when a run is resumed from its recorded absolute path.
	given := dir
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	f := &Flow{
		Path: path, Dir: dir, WorkDir: workDir, givenDir: given, Files: map[string]*hcl.File{},
		Variables: map[string]*Variable{}, Locals: map[string]*Local{}, taskIndex: map[string]*Task{},
		moduleIndex: map[string]*ModuleCall{},
	}
	parser := hclparse.NewParser()
	var diags, parsing hcl.Diagnostics
	var blocks hcl.Blocks
	hash := sha256.New()
	for _, name := range files {
		file, d := parseFile(parser, name)
		parsing = append(parsing, d...)
		if file == nil {
			continue
		}
		f.Files[name] = file
		fmt.Fprintf(hash, "%s\x00%d\x00", filepath.Base(name), len(file.Bytes))
		hash.Write(file.Bytes)
		content, d := file.Body.Content(rootSchema)
		diags = append(diags, d...)
		blocks = append(blocks, content.Blocks...)
	}
	if parsing.HasErrors() {
		// A file that does not parse may have lost any part of it: what is left would
		// only give errors that are not there.
		f.Hash = hex.EncodeToString(hash.Sum(nil))
		return f, append(parsing, diags...)
	}
	diags = append(parsing, diags...)
	f.Decoded = true
	// Phases: variables and locals first, so task and output checks can name them.
	// A mistake in one phase does not stop the next: every phase reports what it
	// finds, and what depends on a declaration in error is left unknown.
	for _, b := range blocks.OfType("variable") {
		diags = append(diags, f.decodeVariable(b)...)
	}
	for _, b := range blocks.OfType("locals") {
		diags = append(diags, f.decodeLocals(b)...)
	}
	// Plugins before tasks: their types join the registry the tasks are checked against.
	reg, d := f.loadPlugins(blocks.OfType("plugin"), reg)
	diags = append(diags, d...)
	for _, b := range blocks.OfType("task") {
		diags = append(diags, unlessPluginFailed(d, f.decodeTask(b, reg))...)
	}
	for _, b := range blocks.OfType("output") {
		diags = append(diags, f.decodeOutput(b)...)
	}
	for _, b := range blocks.OfType("module") {
		diags = append(diags, f.decodeModule(b, reg, stack)...)
	}
	// A module's files are part of the flow: changing one changes the hash.
	for _, m := range f.Modules {
		if m.Flow != nil {
			fmt.Fprintf(hash, "module\x00%s\x00%s", m.Name, m.Flow.Hash)
		}
	}
	f.Hash = hex.EncodeToString(hash.Sum(nil))
	diags = append(diags, f.checkReferences(reg)...)
	return f, diags
}

// parseFile reads and parses one flow file, refusing one nested deeper than
// MaxNesting before the parser sees it.
func parseFile(parser *hclparse.Parser, name string) (*hcl.File, hcl.Diagnostics) {
	src, err := os.ReadFile(name)
	if err != nil {
		return nil, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Cannot read flow file", Detail: err.Error()}}
	}
	if diags := CheckNesting(src, name, ConfigSyntax); diags.HasErrors() {
		return nil, diags
	}
	return parser.ParseHCL(src, name)
}

// flowFiles lists the .hcl files of a flow, sorted, and the directory they live in.
func flowFiles(path string) ([]string, string, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, "", err
	}
	if !info.IsDir() {
		return []string{path}, filepath.Dir(path), nil
	}
	matches, err := filepath.Glob(filepath.Join(path, "*.hcl"))
	if err != nil {
		return nil, "", err
	}
	if len(matches) == 0 {
		return nil, "", fmt.Errorf("directory %s has no .hcl files", path)
	}
	sort.Strings(matches)
	return matches, path, nil
}

func errorf(subject hcl.Range, summary, detail string, args ...any) *hcl.Diagnostic {
	return &hcl.Diagnostic{
		Severity: hcl.DiagError, Summary: summary,
		Detail: fmt.Sprintf(detail, args...), Subject: subject.Ptr(),
	}
}

// Suggest returns ` Did you mean "x"?` for the candidate closest to given (at most
// two edits away), or "".
func Suggest(given string, candidates []string) string { return suggest(given, candidates) }

// suggest returns ` Did you mean "x"?` for the closest candidate, or "".
func suggest(given string, candidates []string) string {
	best, bestDist := "", 3
	for _, c := range candidates {
		if d := levenshtein(given, c); d < bestDist {
			best, bestDist = c, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" Did you mean %q?", best)
}

func levenshtein(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

func quoteAll(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(q, ", ")
}
