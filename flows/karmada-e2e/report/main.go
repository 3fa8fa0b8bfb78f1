// Command report prints a run of Karmada's e2e suite on the lab from ginkgo's JSON
// report: passed, failed and skipped specs per file (each file of
// test/e2e/suites/base is one area, a "suite" in the words), every failure
// with its first line, and the specs left out with the reason flows/karmada-e2e/
// leave-out.txt gives. It exits 1 when a spec failed.
//
//	go run ./flows/karmada-e2e/report --leave-out flows/karmada-e2e/leave-out.txt REPORT.json
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "report:", err)
		os.Exit(1)
	}
}

// spec is what the report needs of one of ginkgo's SpecReports.
type spec struct {
	ContainerHierarchyTexts  []string
	ContainerHierarchyLabels [][]string
	LeafNodeLabels           []string
	LeafNodeText             string
	LeafNodeType             string
	LeafNodeLocation         struct{ FileName string }
	State                    string
	RunTime                  time.Duration
	Failure                  struct{ Message string }
}

func (s spec) file() string { return path.Base(s.LeafNodeLocation.FileName) }
func (s spec) fullText() string {
	return strings.Join(append(s.ContainerHierarchyTexts, s.LeafNodeText), " ")
}

// labels are the spec's ginkgo labels and its containers'.
func (s spec) labels() []string {
	out := slices.Clone(s.LeafNodeLabels)
	for _, l := range s.ContainerHierarchyLabels {
		out = append(out, l...)
	}
	return out
}

// leaveOut is one line of leave-out.txt: every spec of file, those whose full text
// matches re, or those with label.
type leaveOut struct {
	file, label, reason string
	re                  *regexp.Regexp
}

func (l leaveOut) matches(s spec) bool {
	if l.label != "" {
		return slices.Contains(s.labels(), l.label)
	}
	return s.file() == l.file && (l.re == nil || l.re.MatchString(s.fullText()))
}

func (l leaveOut) String() string {
	switch {
	case l.label != "":
		return "label " + l.label
	case l.re != nil:
		return l.file + ": " + l.re.String()
	}
	return l.file
}

// errFailed is run's error when a spec failed.
var errFailed = errors.New("specs failed")

func run(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	leaveOutFile := fs.String("leave-out", "", "leave-out.txt: the specs left out and why")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return errors.New("usage: report --leave-out FILE REPORT.json")
	}
	specs, err := readReport(fs.Arg(0))
	if err != nil {
		return err
	}
	var left []leaveOut
	if *leaveOutFile != "" {
		if left, err = readLeaveOut(*leaveOutFile); err != nil {
			return err
		}
	}
	if failed := write(out, specs, left); failed > 0 {
		return fmt.Errorf("%d %w", failed, errFailed)
	}
	return nil
}

func readReport(name string) ([]spec, error) {
	data, err := os.ReadFile(name)
	if err != nil {
		return nil, err
	}
	var suites []struct{ SpecReports []spec }
	if err := json.Unmarshal(data, &suites); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	var specs []spec
	for _, s := range suites {
		for _, r := range s.SpecReports {
			if r.LeafNodeType == "It" {
				specs = append(specs, r)
			}
		}
	}
	return specs, nil
}

// readLeaveOut parses leave-out.txt: "FILE[:REGEX] | reason" or "label:LABEL |
// reason" per line, # comments.
func readLeaveOut(name string) ([]leaveOut, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []leaveOut
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line, _, _ := strings.Cut(sc.Text(), "#")
		if strings.TrimSpace(line) == "" {
			continue
		}
		what, reason, ok := strings.Cut(line, "|")
		if !ok {
			return nil, fmt.Errorf("%s:%d: want FILE[:REGEX] | reason", name, n)
		}
		file, re, hasRE := strings.Cut(strings.TrimSpace(what), ":")
		l := leaveOut{file: file, reason: strings.TrimSpace(reason)}
		if file == "label" {
			l.file, l.label = "", re
		} else if hasRE {
			if l.re, err = regexp.Compile(re); err != nil {
				return nil, fmt.Errorf("%s:%d: %w", name, n, err)
			}
		}
		out = append(out, l)
	}
	return out, sc.Err()
}

// tally counts one file's specs by outcome.
type tally struct {
	passed, failed, leftOut, skipped int
	time                             time.Duration
}

// write prints the report and returns how many specs failed.
func write(out io.Writer, specs []spec, left []leaveOut) int {
	files := map[string]*tally{}
	leftBy := make([]int, len(left))
	var failures []spec
	for _, s := range specs {
		t := files[s.file()]
		if t == nil {
			t = &tally{}
			files[s.file()] = t
		}
		t.time += s.RunTime
		switch s.State {
		case "passed":
			t.passed++
		case "skipped", "pending":
			if i := leftOutBy(left, s); i >= 0 {
				leftBy[i]++
				t.leftOut++
			} else {
				t.skipped++ // outside the set run, or by the suite itself
			}
		default: // failed, panicked, timedout, interrupted, aborted
			t.failed++
			failures = append(failures, s)
		}
	}
	names := make([]string, 0, len(files))
	for f := range files {
		names = append(names, f)
	}
	sort.Strings(names)
	var sum tally
	fmt.Fprintf(out, "%-36s %6s %6s %8s %8s %8s\n", "file", "passed", "failed", "left out", "skipped", "time")
	for _, f := range names {
		t := files[f]
		fmt.Fprintf(out, "%-36s %6d %6d %8d %8d %8s\n", f, t.passed, t.failed, t.leftOut, t.skipped, t.time.Round(time.Second))
		sum.passed, sum.failed, sum.leftOut, sum.skipped, sum.time = sum.passed+t.passed, sum.failed+t.failed, sum.leftOut+t.leftOut, sum.skipped+t.skipped, sum.time+t.time
	}
	fmt.Fprintf(out, "%-36s %6d %6d %8d %8d %8s\n", "all", sum.passed, sum.failed, sum.leftOut, sum.skipped, sum.time.Round(time.Second))
	if len(failures) > 0 {
		fmt.Fprintln(out, "\nFailed:")
		for _, s := range failures {
			fmt.Fprintf(out, "  %s: %s (%s)\n    %s\n", s.file(), s.fullText(), s.State, firstLines(s.Failure.Message, 3))
		}
	}
	if len(left) > 0 {
		fmt.Fprintln(out, "\nLeft out:")
		for i, l := range left {
			fmt.Fprintf(out, "  %s (%d specs): %s\n", l, leftBy[i], l.reason)
		}
	}
	return sum.failed
}

// firstLines is the first n non-blank lines of msg on one line.
func firstLines(msg string, n int) string {
	var out []string
	for _, line := range strings.Split(msg, "\n") {
		if line = strings.TrimSpace(line); line != "" && len(out) < n {
			out = append(out, line)
		}
	}
	return strings.Join(out, " ")
}

// leftOutBy is the index of the first entry of left that s matches, or -1.
func leftOutBy(left []leaveOut, s spec) int {
	for i, l := range left {
		if l.matches(s) {
			return i
		}
	}
	return -1
}
