package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCount(t *testing.T) {
	for _, tt := range []struct {
		n    int
		noun string
		want string
	}{
		{0, "instance", "0 instances"},
		{1, "instance", "1 instance"},
		{2, "instance", "2 instances"},
		{1, "task instance", "1 task instance"},
		{7, "task instance", "7 task instances"},
		{1, "task", "1 task"},
		{3, "task", "3 tasks"},
		{1, "run", "1 run"},
		{2, "run", "2 runs"},
		{1, "file is", "1 file is"},
		{2, "file is", "2 files are"},
		{1, "left as it is", "1 left as it is"},
		{4, "left as it is", "4 left as they are"},
	} {
		if got := count(tt.n, tt.noun); got != tt.want {
			t.Errorf("count(%d, %q) = %q, want %q", tt.n, tt.noun, got, tt.want)
		}
	}
}

// TestSingularPhrases: every count a command prints about one task, one instance or
// one file is in the singular, and the plural ones stay as they were.
func TestSingularPhrases(t *testing.T) {
	h := newHarness(t)
	one := flowPath("one.hcl")
	for _, tt := range []struct {
		args []string
		want []string // in stdout
	}{
		{[]string{"validate", one}, []string{"testdata/flows/one.hcl is valid: 1 task, 1 instance.\n"}},
		{[]string{"validate", flowPath("quick.hcl")}, []string{"is valid: 5 tasks, 7 instances.\n"}},
		{[]string{"plan", one}, []string{"1 instance: 1 to run, 0 to skip, 0 decided at run time.\n"}},
		{[]string{"run", one}, []string{"Starting run 1 of testdata/flows/one.hcl: 1 task instance, parallelism 10\n",
			"Run 1 succeeded in <dur>: 1 succeeded.\n"}},
		{[]string{"status"}, []string{"\n1 instance: 1 succeeded\n"}},
		{[]string{"destroy", "--auto-approve"}, []string{"Destroy run 2 succeeded in <dur>: 0 destroyed, 1 left as it is.\n"}},
	} {
		r := h.expect(ExitOK, tt.args...)
		for _, want := range tt.want {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("flow %s: lacks %q:\n%s", strings.Join(tt.args, " "), want, r.stdout)
			}
		}
	}
	// fmt --check: one unformatted file, then three.
	h.copyFlow("unformatted.hcl", "unformatted.hcl")
	for _, tt := range []struct {
		n    int
		want string
	}{{1, "1 file is not formatted"}, {3, "3 files are not formatted"}} {
		n, want := tt.n, tt.want
		for i := 1; i < n; i++ {
			if err := os.WriteFile(filepath.Join(h.tmp, fmt.Sprintf("more%d.hcl", i)), []byte("x   =   1\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		r := h.expect(ExitTaskFailed, "fmt", "--check", h.tmp)
		if r.err == nil || r.err.Error() != want {
			t.Errorf("fmt --check of %d unformatted files: err = %v, want %q", n, r.err, want)
		}
	}
}
