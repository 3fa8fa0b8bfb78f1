package main

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// A report counts each file's specs by outcome, tells a spec left out by leave-out.txt
// from one outside the set, quotes each failure's first line, and fails when one failed.
func TestReport(t *testing.T) {
	var out bytes.Buffer
	err := run([]string{"--leave-out", "testdata/leave-out.txt", "testdata/report.json"}, &out)
	if !errors.Is(err, errFailed) {
		t.Errorf("run = %v, want %v", err, errFailed)
	}
	for _, want := range []string{
		"karmadactl_test.go                        0      0        2        1       0s",
		"propagationpolicy_test.go                 1      1        0        0       3s",
		"search_test.go                            0      0        1        0       0s",
		"all                                       1      1        3        1       3s",
		"propagationpolicy_test.go: [BasicCase] PropagationPolicy testing job (failed)\n    Timed out after 300s. more\n",
		"search_test.go (1 specs): not installed",
		"karmadactl_test.go: Karmadactl top testing (1 specs): no metrics-server",
		"label needCreateCluster (1 specs): kind",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
}

func TestReadLeaveOutBadLine(t *testing.T) {
	_, err := readLeaveOut("testdata/report.json")
	if err == nil || !strings.Contains(err.Error(), "testdata/report.json:1: want FILE[:REGEX] | reason") {
		t.Errorf("err = %v", err)
	}
}
