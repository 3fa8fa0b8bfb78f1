// Package taskdoc renders a task type's documentation from what the type registers:
// Summary, Doc, its struct's attributes and their doc tags, the shared settings,
// Outputs, how it is undone (Type.UndoText) and Example, so the reference cannot fall
// behind the code. It renders two forms of one description: the reference page
// docs/tasks/TYPE.md (Markdown) and what `flow tasks TYPE` prints (Text).
//
// It does not own the hand-written notes a page may carry after NotesMarker: callers
// keep them when they rewrite a page (Page).
package taskdoc

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/flowdev/flow/tasks"
)

// NotesMarker starts the hand-written part of a page, which rendering keeps as is.
const NotesMarker = "<!-- Notes: written by hand below this line; kept when the page is regenerated. -->"

// description is what both renderers show of a type.
type description struct {
	t       *tasks.Type
	attrs   []tasks.Attribute
	outputs []outputDoc
}

type outputDoc struct {
	name, typ, doc string
}

func describe(t *tasks.Type) (*description, error) {
	attrs, err := tasks.Attributes(t.New())
	if err != nil {
		return nil, fmt.Errorf("task type %s: %w", t.Name, err)
	}
	d := &description{t: t, attrs: attrs}
	for _, o := range t.Outputs {
		doc := o.Doc
		if o.Sensitive {
			doc += " Sensitive: never printed, logged or stored."
		}
		d.outputs = append(d.outputs, outputDoc{o.Name, tasks.TypeString(o.Type), doc})
	}
	return d, nil
}

func required(a tasks.Attribute) string {
	if a.Required {
		return "required"
	}
	return "optional"
}

// Markdown renders the generated part of t's page.
func Markdown(t *tasks.Type) (string, error) {
	d, err := describe(t)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString("<!-- Generated from the task registry by `go test ./cmd/flow -run TestTaskPages -update`:\n")
	b.WriteString("     edit the type's Summary, Doc, doc tags, Outputs and Example, not this part. -->\n")
	fmt.Fprintf(&b, "# `%s`\n\n%s.\n", t.Name, strings.TrimSuffix(strings.TrimSpace(t.Summary), "."))
	if doc := strings.TrimSpace(t.Doc); doc != "" {
		fmt.Fprintf(&b, "\n%s\n", doc)
	}
	b.WriteString("\n| attribute | type | | |\n|---|---|---|---|\n")
	for _, a := range d.attrs {
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", a.Name, tasks.TypeString(a.Type), required(a), cell(a.Doc))
	}
	b.WriteString("\nAnd the [shared settings](../language.md#tasks) of every task: `" + strings.Join(tasks.SharedSettings, "`, `") + "`.\n")
	if len(d.outputs) > 0 {
		b.WriteString("\n| output | type | |\n|---|---|---|\n")
		for _, o := range d.outputs {
			fmt.Fprintf(&b, "| `%s` | %s | %s |\n", o.name, o.typ, cell(o.doc))
		}
	}
	fmt.Fprintf(&b, "\n**Undo:** %s\n", t.UndoText())
	fmt.Fprintf(&b, "\n**Refresh:** %s\n", t.RefreshText())
	if ex := strings.TrimSpace(t.Example); ex != "" {
		fmt.Fprintf(&b, "\n## Example\n\n```hcl\n%s\n```\n", ex)
	}
	return b.String(), nil
}

// Text renders t as `flow tasks TYPE` prints it.
func Text(t *tasks.Type) (string, error) {
	d, err := describe(t)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s\n", t.Name, t.Summary)
	if t.Doc != "" {
		fmt.Fprintf(&b, "\n%s\n", strings.TrimSpace(t.Doc))
	}
	b.WriteString("\nAttributes:\n")
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	for _, a := range d.attrs {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", a.Name, tasks.TypeString(a.Type), required(a), a.Doc)
	}
	tw.Flush()
	b.WriteString("\nShared settings: " + strings.Join(tasks.SharedSettings, ", ") + "\n")
	if len(d.outputs) > 0 {
		b.WriteString("\nOutputs:\n")
		for _, o := range d.outputs {
			fmt.Fprintf(tw, "  %s\t%s\t%s\n", o.name, o.typ, o.doc)
		}
		tw.Flush()
	}
	fmt.Fprintf(&b, "\nUndo (flow destroy): %s\n", t.UndoText())
	fmt.Fprintf(&b, "Refresh: %s\n", t.RefreshText())
	if t.Example != "" {
		ex := strings.TrimSpace(t.Example)
		fmt.Fprintf(&b, "\nExample:\n\n%s\n", "  "+strings.ReplaceAll(ex, "\n", "\n  "))
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
