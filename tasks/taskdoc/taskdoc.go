// Package taskdoc renders a task type's reference page (docs/tasks/TYPE.md) from what
// the type registers: Summary, Doc, its struct's attributes and their doc tags,
// Outputs and Example, so the reference cannot fall behind the code.
//
// It does not own the hand-written notes a page may carry after NotesMarker: callers
// keep them when they rewrite a page (Page).
package taskdoc

import (
	"fmt"
	"strings"

	"github.com/flowdev/flow/tasks"
)

// NotesMarker starts the hand-written part of a page, which rendering keeps as is.
const NotesMarker = "<!-- Notes: written by hand below this line; kept when the page is regenerated. -->"

// Markdown renders the generated part of t's page.
func Markdown(t *tasks.Type) (string, error) {
	attrs, err := tasks.Attributes(t.New())
	if err != nil {
		return "", fmt.Errorf("task type %s: %w", t.Name, err)
	}
	var b strings.Builder
	b.WriteString("<!-- Generated from the task registry by `go test ./cmd/flow -run TestTaskPages -update`:\n")
	b.WriteString("     edit the type's Summary, Doc, doc tags, Outputs and Example, not this part. -->\n")
	fmt.Fprintf(&b, "# `%s`\n\n%s.\n", t.Name, strings.TrimSuffix(strings.TrimSpace(t.Summary), "."))
	if doc := strings.TrimSpace(t.Doc); doc != "" {
		fmt.Fprintf(&b, "\n%s\n", doc)
	}
	b.WriteString("\n| attribute | type | | |\n|---|---|---|---|\n")
	for _, a := range attrs {
		req := "optional"
		if a.Required {
			req = "required"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", a.Name, tasks.TypeString(a.Type), req, cell(a.Doc))
	}
	b.WriteString("\nAnd the [shared settings](../language.md#tasks) of every task: `" + strings.Join(tasks.SharedSettings, "`, `") + "`.\n")
	if len(t.Outputs) > 0 {
		b.WriteString("\n| output | type | |\n|---|---|---|\n")
		for _, o := range t.Outputs {
			doc := o.Doc
			if o.Sensitive {
				doc += " Sensitive: never printed, logged or stored."
			}
			fmt.Fprintf(&b, "| `%s` | %s | %s |\n", o.Name, tasks.TypeString(o.Type), cell(doc))
		}
	}
	if t.Undo != "" {
		fmt.Fprintf(&b, "\n**Undo:** %s\n", t.Undo)
	}
	if ex := strings.TrimSpace(t.Example); ex != "" {
		fmt.Fprintf(&b, "\n## Example\n\n```hcl\n%s\n```\n", ex)
	}
	return b.String(), nil
}

// Page renders t's page over existing, the page as it is (nil if there is none): the
// generated part anew, the notes after NotesMarker kept.
func Page(t *tasks.Type, existing []byte) (string, error) {
	gen, err := Markdown(t)
	if err != nil {
		return "", err
	}
	_, notes, ok := strings.Cut(string(existing), NotesMarker+"\n")
	if !ok || strings.TrimSpace(notes) == "" {
		return gen, nil
	}
	return gen + "\n" + NotesMarker + "\n" + notes, nil
}

// cell makes text safe in a one-line table cell.
func cell(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	return strings.ReplaceAll(s, "|", `\|`)
}
