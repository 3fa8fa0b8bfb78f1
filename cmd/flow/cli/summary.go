package cli

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/hashicorp/hcl/v2/hclwrite"
	"github.com/zclconf/go-cty/cty"

	"github.com/flowdev/flow/engine"
)

// summary prints the end of a run: on failure the first failing instance's error and
// the tail of its output come first, then the counts, outputs and what to do next.
func (c *CLI) summary(run *engine.RunRecord, res *engine.Result, runner engine.Progress, took time.Duration, hint string) {
	w := c.stdout
	fmt.Fprintln(w)
	if res.FirstFailure != "" {
		for _, r := range res.Records {
			if r.Address == res.FirstFailure {
				fmt.Fprintf(w, "First failure: %s: %s\n", r.Address, r.Error)
			}
		}
		if out, ok := runner.Log(res.FirstFailure); ok && len(out) > 0 {
			fmt.Fprintf(w, "Last output of %s:\n", res.FirstFailure)
			for _, line := range tailLines(string(out), 15) {
				fmt.Fprintf(w, "  | %s\n", line)
			}
		}
		fmt.Fprintln(w)
	}
	counts := map[engine.Status]int{}
	for _, r := range res.Records {
		if r.Removed && r.Status == engine.Succeeded {
			continue // counted in res.Removed
		}
		counts[r.Status]++
	}
	parts := []string{fmt.Sprintf("%d succeeded", counts[engine.Succeeded])}
	if res.UpToDate > 0 {
		parts[0] += fmt.Sprintf(" (%d up to date)", res.UpToDate)
	}
	if res.Removed > 0 {
		parts = append(parts, fmt.Sprintf("%d removed (no longer in the flow)", res.Removed))
	}
	for _, s := range []engine.Status{engine.Failed, engine.Skipped, engine.Interrupted, engine.Pending} {
		if counts[s] > 0 {
			name := string(s)
			if s == engine.Pending {
				name = "not started"
			}
			parts = append(parts, fmt.Sprintf("%d %s", counts[s], name))
		}
	}
	if run.Status == engine.Pending {
		// What "flow status" and "flow runs" say of it: its targets succeeded, the
		// rest of the flow has not run.
		fmt.Fprintf(w, "Run %d pending after %s (its --target instances ran): %s.\n", run.ID, roundDuration(took), strings.Join(parts, ", "))
	} else {
		fmt.Fprintf(w, "Run %d %s in %s: %s.\n", run.ID, res.Status, roundDuration(took), strings.Join(parts, ", "))
	}
	printSlowest(w, res.Records, slowestShown)
	c.printOutputs(res.Outputs)
	if run.Status == engine.Pending {
		fmt.Fprintf(w, "The instances --target left out have not run; %q runs them (a plain \"flow run\" starts a new run of the whole flow).\n", hint)
	} else if res.Status != engine.Succeeded {
		fmt.Fprintf(w, "Continue with %q; see %q and %q.\n", hint, c.commandHint("flow status"), c.commandHint("flow logs", "ADDRESS"))
	}
}

// slowestShown is how many of the slowest instances a summary names.
const slowestShown = 5

// printSlowest names the n instances of this run that took longest, a second or more
// each, so a long run says where its time went without reading the log.
func printSlowest(w io.Writer, recs []*engine.InstanceRecord, n int) {
	type took struct {
		addr string
		d    time.Duration
	}
	var all []took
	for _, r := range recs {
		if r.StartedAt == nil || r.FinishedAt == nil || r.Reason != "" && strings.HasPrefix(r.Reason, "up to date") {
			continue
		}
		if d := r.FinishedAt.Sub(*r.StartedAt); d >= time.Second {
			all = append(all, took{r.Address, d})
		}
	}
	if len(all) == 0 {
		return
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].d > all[j].d })
	all = all[:min(n, len(all))]
	fmt.Fprintln(w, "Slowest:")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, t := range all {
		fmt.Fprintf(tw, "  %s\t%s\n", t.addr, t.d.Round(100*time.Millisecond))
	}
	tw.Flush()
}

func (c *CLI) printOutputs(outs map[string]cty.Value) {
	if len(outs) == 0 {
		return
	}
	names := make([]string, 0, len(outs))
	for n := range outs {
		names = append(names, n)
	}
	sort.Strings(names)
	fmt.Fprintln(c.stdout, "Outputs:")
	for _, n := range names {
		v := outs[n]
		text := "(sensitive)"
		if !v.ContainsMarked() {
			text = renderValue(v)
			// Nested lines keep their place under the name.
			text = strings.ReplaceAll(text, "\n", "\n  ")
		}
		fmt.Fprintf(c.stdout, "  %s = %s\n", n, text)
	}
}

// longList is the width past which a list of strings prints one element per line.
const longList = 100

// renderValue is v in HCL syntax; a list of strings too long for one line (commands to
// try, findings) gets a line per element, as a person would write it.
func renderValue(v cty.Value) string {
	text := strings.TrimSpace(string(hclwrite.TokensForValue(v).Bytes()))
	t := v.Type()
	if len(text) <= longList || !v.IsWhollyKnown() || v.IsNull() ||
		!(t.IsListType() || t.IsTupleType() || t.IsSetType()) {
		return text
	}
	var b strings.Builder
	b.WriteString("[\n")
	for it := v.ElementIterator(); it.Next(); {
		_, e := it.Element()
		if e.IsNull() || e.Type() != cty.String {
			return text
		}
		b.WriteString("  " + strings.TrimSpace(string(hclwrite.TokensForValue(e).Bytes())) + ",\n")
	}
	b.WriteString("]")
	return b.String()
}

func tailLines(s string, n int) []string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return lines
}

func roundDuration(d time.Duration) time.Duration {
	if d < time.Second {
		return d.Round(time.Millisecond)
	}
	return d.Round(10 * time.Millisecond)
}

// resumeHint is the resume command line that continues this run: the state file if it
// was given, and the variable flags whose values the state does not keep. Sensitive
// values are never printed: a --var that set one is shown as NAME=... to fill in.
func (c *CLI) resumeHint(l *engine.Loaded, v varFlags) string {
	args := []string{c.commandHint("flow resume")}
	if !setsSensitive(l) {
		return strings.Join(args, " ")
	}
	for _, f := range v.files {
		args = append(args, "--var-file", shellQuote(f))
	}
	for _, kv := range v.vars {
		name, _, _ := strings.Cut(kv, "=")
		if variable, ok := l.Flow.Variables[name]; ok && variable.Sensitive {
			args = append(args, "--var", name+"=...")
		}
	}
	return strings.Join(args, " ")
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+@") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func setsSensitive(l *engine.Loaded) bool {
	for name := range l.Vars {
		if v, ok := l.Flow.Variables[name]; ok && v.Sensitive {
			return true
		}
	}
	return false
}
