package e2e

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/flowdev/flow/internal/pgtest"
)

// TestUIOnPostgres (issues 31 and 32): flow ui serves a PostgreSQL state as it serves a
// file, while a run on another "machine" holds the state's lock and after it: the page's
// data shows the running instance running, then succeeded.
func TestUIOnPostgres(t *testing.T) {
	binary(t)
	dir := t.TempDir()
	url := pgtest.Database(t) + "&state=ui"
	gate := filepath.Join(dir, "gate")
	writeFiles(t, dir, map[string]string{"g.hcl": `variable "gate" {
  type = string
}

task "exec" "first" {
  script = "true"
}

task "exec" "slow" {
  depends_on = [exec.first]
  script     = "while [ ! -f '${var.gate}' ]; do sleep 0.05; done"
}
`})
	tag := newTag(t)
	run := start(t, tag, dir, "run", "g.hcl", "--state", url, "--var", "gate="+gate, "--progress", "plain")
	base := serveUI(t, tag, t.TempDir(), url)
	slowIs := func(want string) bool {
		var d struct {
			Instances []struct{ Address, Status string } `json:"instances"`
		}
		if !getJSON(base+"/api/run?id=1", &d) {
			return false
		}
		for _, in := range d.Instances {
			if in.Address == "exec.slow" {
				return in.Status == want
			}
		}
		return false
	}
	waitFor(t, 30*time.Second, "the page's data shows exec.slow running", func() bool { return slowIs("running") })
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if !run.wait(time.Minute) || run.code() != 0 {
		t.Fatalf("the run did not succeed\n%s", run.describe())
	}
	waitFor(t, 10*time.Second, "the page's data shows exec.slow succeeded", func() bool { return slowIs("succeeded") })
}

// getJSON GETs url into v; false when it does not answer 200 with JSON.
func getJSON(url string, v any) bool {
	resp, err := http.Get(url)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	return resp.StatusCode == http.StatusOK && json.NewDecoder(resp.Body).Decode(v) == nil
}

// waitFor polls ok until it holds, failing the test after timeout.
func waitFor(t *testing.T, timeout time.Duration, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(timeout); !ok(); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
	}
}
