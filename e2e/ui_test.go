package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/flowdev/flow/internal/browser"
)

// TestUI drives flow ui in Debian's chromium (headless): while a run is in progress
// the graph shows every instance in the state flow status gives it, a node turns
// from running to succeeded without a reload, a failed instance's output shows, a
// secret never reaches the page, the timeline's bars are the recorded times, and
// after the flow file changed a past run is drawn with the graph recorded for it.
// Screenshots are written to $FLOW_E2E_ARTIFACTS (else a directory the test logs).
func TestUI(t *testing.T) {
	binary(t)
	dir := t.TempDir()
	state := filepath.Join(dir, "state.db")
	gate := filepath.Join(dir, "gate")
	flowDir := filepath.Join(dir, "flow")
	copyTree(t, testdata(t, "ui"), flowDir)
	tag := newTag(t)
	shots := artifacts(t)

	run := start(t, tag, dir, "run", filepath.Join(flowDir, "main.hcl"), "--state", state, "--var", "gate="+gate)
	waitStatus(t, tag, dir, state, 30*time.Second, "exec.slow running", func(d statusDoc) bool {
		return d.byAddress()["exec.slow"].Status == "running"
	})
	base := serveUI(t, tag, dir, state)

	ctx := browser.Start(t, 1400, 900)
	do(t, ctx, "open the page", chromedp.Navigate(base+"/"))
	waitJS(t, ctx, "the graph drawn", `document.querySelectorAll("#graphsvg .inst").length > 0`)
	// A reload would drop this mark.
	do(t, ctx, "mark the page", evalVoid(`window.flowMark = "kept"`))

	// Every instance, in the state the running process gives it.
	doc := status(t, tag, dir, state)
	if doc.Status != "running" || doc.byAddress()["exec.slow"].Status != "running" {
		t.Fatalf("the run moved on before the page was checked: %+v", doc)
	}
	nodes := graphNodes(t, ctx)
	for _, task := range doc.Tasks {
		if got, ok := nodes[task.Address]; !ok {
			t.Errorf("the graph has no node %s", task.Address)
		} else if got != task.Status {
			t.Errorf("node %s is %s, flow status says %s", task.Address, got, task.Status)
		}
	}
	if len(nodes) != len(doc.Tasks) {
		t.Errorf("the graph has %d instances, the run %d: %v", len(nodes), len(doc.Tasks), nodes)
	}
	// for_each instances grouped by task, module instances as subgraphs, edges as recorded.
	groups := evalJSON[map[string]int](t, ctx, `Object.fromEntries([...document.querySelectorAll("#graphsvg .group")].map(g => [g.dataset.task, g.querySelectorAll(".inst").length]))`)
	if groups["exec.build"] != 3 || groups[`module.member["m1"].exec.configure`] != 1 {
		t.Errorf("task groups: %v, want exec.build with 3 instances and module.member[\"m1\"].exec.configure with 1", groups)
	}
	modules := evalJSON[[]string](t, ctx, `[...document.querySelectorAll("#graphsvg .cluster")].map(c => c.dataset.module)`)
	if strings.Join(modules, " ") != `module.member["m1"] module.member["m2"]` {
		t.Errorf("module subgraphs: %q, want one per member", modules)
	}
	edges := graphEdges(t, ctx)
	for _, e := range []string{"exec.prepare -> exec.build", "exec.broken -> exec.after_broken", `exec.build -> module.member["m1"]`,
		`module.member["m2"] -> exec.slow`, `module.member["m1"].exec.launch -> module.member["m1"].exec.configure`} {
		if !edges[e] {
			t.Errorf("the graph has no edge %s; it has %v", e, edges)
		}
	}
	screenshot(t, ctx, shots, "ui-graph-running.png")

	// The failed instance's output and error; the secret's output redacted.
	do(t, ctx, "click exec.broken", chromedp.Click(chromedp.CSS(`#graphsvg .inst[data-address="exec.broken"]`)))
	waitJS(t, ctx, "exec.broken's output", `document.querySelector("#d-output").textContent.includes("broken: the widget is missing")`)
	if got := evalJSON[string](t, ctx, `document.querySelector('#d-fields [data-field="error"]').textContent`); got != "script exited with code 3" {
		t.Errorf("exec.broken's error shows %q", got)
	}
	screenshot(t, ctx, shots, "ui-failed-output.png")
	do(t, ctx, "click exec.secretive", chromedp.Click(chromedp.CSS(`#graphsvg .inst[data-address="exec.secretive"]`)))
	waitJS(t, ctx, "exec.secretive's output", `document.querySelector("#d-output").textContent.includes("token is")`)
	if html := evalJSON[string](t, ctx, `document.documentElement.outerHTML`); strings.Contains(html, "s3cr3t") {
		t.Errorf("the page shows the sensitive variable's value")
	}

	// The running node turns succeeded as the run goes on, without a reload.
	do(t, ctx, "click exec.slow", chromedp.Click(chromedp.CSS(`#graphsvg .inst[data-address="exec.slow"]`)))
	waitJS(t, ctx, "exec.slow's output tailing", `document.querySelector("#d-output").textContent.includes("waiting for the gate")`)
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	waitJS(t, ctx, "exec.slow succeeded on the page", `document.querySelector('#graphsvg .inst[data-address="exec.slow"]').dataset.status === "succeeded"`)
	waitJS(t, ctx, "the run's end on the page", `document.querySelector("#runinfo").dataset.status === "failed"`)
	if mark := evalJSON[string](t, ctx, `String(window.flowMark)`); mark != "kept" {
		t.Errorf("the page was reloaded (mark %q)", mark)
	}
	waitJS(t, ctx, "exec.slow's whole output", `document.querySelector("#d-output").textContent.includes("gate open")`)
	if !run.wait(20 * time.Second) {
		t.Fatalf("the run did not end after the gate opened\n%s", run.describe())
	}
	screenshot(t, ctx, shots, "ui-graph-finished.png")

	// The timeline's bars are the recorded times, drawn to scale.
	doc = status(t, tag, dir, state)
	do(t, ctx, "open the timeline", chromedp.Click(chromedp.CSS(`nav button[data-view="timeline"]`)))
	waitJS(t, ctx, "the timeline drawn", `document.querySelectorAll(".gantt .bar").length > 0`)
	checkTimeline(t, ctx, doc, true)
	screenshot(t, ctx, shots, "ui-timeline.png")

	// Run 2 of a changed flow: exec.broken is gone, exec.report is new.
	edited := strings.Replace(readFile(t, filepath.Join(flowDir, "main.hcl")), `task "exec" "broken" {`, `task "exec" "report" {
  depends_on = [exec.slow]
  script     = "echo report"
}

task "exec" "broken_gone" {`, 1)
	edited = strings.Replace(edited, "depends_on = [exec.broken]", "depends_on = [exec.broken_gone]", 1)
	edited = strings.Replace(edited, "exit 3", "exit 0", 1)
	if err := os.WriteFile(filepath.Join(flowDir, "main.hcl"), []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := runFlow(t, tag, dir, 60*time.Second, "run", filepath.Join(flowDir, "main.hcl"), "--new", "--state", state, "--var", "gate="+gate); r.code != 0 {
		t.Fatalf("run 2 of the changed flow exited %d\n%s", r.code, r.desc)
	}
	do(t, ctx, "open the history", chromedp.Click(chromedp.CSS(`nav button[data-view="history"]`)))
	waitJS(t, ctx, "two runs in the history", `document.querySelectorAll("#runs tbody tr").length === 2`)
	waitJS(t, ctx, "task charts", `document.querySelector('.taskchart[data-task="exec.slow"] rect[data-run="2"]') !== null`)
	screenshot(t, ctx, shots, "ui-history.png")
	do(t, ctx, "open run 1", chromedp.Click(chromedp.CSS(`#runs tr[data-run="1"]`)))
	waitJS(t, ctx, "run 1 drawn", `document.querySelector("#runinfo").dataset.run === "1" && document.querySelectorAll("#graphsvg .inst").length > 0`)
	past := graphNodes(t, ctx)
	if _, ok := past["exec.broken"]; !ok || past["exec.broken"] != "failed" {
		t.Errorf("run 1 is not drawn with its own graph: exec.broken is %q in %v", past["exec.broken"], past)
	}
	if _, ok := past["exec.report"]; ok {
		t.Errorf("run 1 is drawn with today's flow: it has exec.report")
	}
	if !graphEdges(t, ctx)["exec.broken -> exec.after_broken"] {
		t.Errorf("run 1's graph lost its edge exec.broken -> exec.after_broken")
	}
	screenshot(t, ctx, shots, "ui-past-run.png")
	do(t, ctx, "open run 2", chromedp.Navigate(base+"/?run=2"))
	waitJS(t, ctx, "run 2 drawn", `document.querySelector("#runinfo").dataset.run === "2" && document.querySelectorAll("#graphsvg .inst").length > 0`)
	now := graphNodes(t, ctx)
	if _, ok := now["exec.report"]; !ok || !graphEdges(t, ctx)["exec.slow -> exec.report"] {
		t.Errorf("run 2 lacks exec.report or its edge from exec.slow: %v", now)
	}
	// exec.broken is in run 2 only as what that run found removed from the flow.
	if _, ok := now["exec.broken"]; ok && !evalJSON[bool](t, ctx, `document.querySelector('#graphsvg .inst[data-address="exec.broken"]').hasAttribute("data-removed")`) {
		t.Errorf("run 2 draws exec.broken, which its flow no longer has, as an instance of its flow")
	}

	// A destroy run is drawn the same way: what it undid, in its own graph and timeline.
	if r := runFlow(t, tag, dir, 60*time.Second, "destroy", "--state", state, "--auto-approve"); r.code != 0 {
		t.Fatalf("flow destroy exited %d\n%s", r.code, r.desc)
	}
	do(t, ctx, "open the destroy run", chromedp.Navigate(base+"/?run=3"))
	waitJS(t, ctx, "run 3 drawn", `document.querySelector("#runinfo").dataset.run === "3" && document.querySelectorAll("#graphsvg .inst").length > 0`)
	if info := evalJSON[string](t, ctx, `document.querySelector("#runinfo").textContent`); !strings.Contains(info, "destroy of run 2") {
		t.Errorf("the destroy run's header says %q, want it to name run 2", info)
	}
	undone := graphNodes(t, ctx)
	for _, addr := range []string{"exec.prepare", `exec.build["a"]`, `exec.build["c"]`} {
		if undone[addr] != "undone" {
			t.Errorf("destroy run: %s is %q, want undone (%v)", addr, undone[addr], undone)
		}
	}
	if !graphEdges(t, ctx)["exec.prepare -> exec.build"] {
		t.Errorf("the destroy run's graph lost the edge exec.prepare -> exec.build")
	}
	do(t, ctx, "open the destroy's timeline", chromedp.Click(chromedp.CSS(`nav button[data-view="timeline"]`)))
	waitJS(t, ctx, "the destroy's timeline", `document.querySelectorAll(".gantt .bar").length > 0`)
	r := runFlow(t, tag, dir, 10*time.Second, "status", "--json", "--state", state)
	var destroyDoc statusDoc // flow status --json of a destroy has "destroys" too
	if err := json.Unmarshal([]byte(r.stdout), &destroyDoc); r.code != 0 || err != nil {
		t.Fatalf("flow status of the destroy run: %v\n%s", err, r.desc)
	}
	checkTimeline(t, ctx, destroyDoc, false)
	screenshot(t, ctx, shots, "ui-destroy-timeline.png")
}

// TestUIRefusesSecondOnSamePort: a second flow ui on the port of the first exits 2
// naming the address.
func TestUIRefusesSecondOnSamePort(t *testing.T) {
	binary(t)
	dir := t.TempDir()
	tag := newTag(t)
	state := filepath.Join(dir, "state.db")
	base := serveUI(t, tag, dir, state)
	addr := strings.TrimPrefix(base, "http://")
	r := runFlow(t, tag, dir, 10*time.Second, "ui", "--state", state, "--listen", addr)
	if r.code != 2 || !strings.Contains(r.stderr, addr+" is in use (another flow ui?)") {
		t.Errorf("a second flow ui on %s exited %d, want 2 and a message naming the address\n%s", addr, r.code, r.desc)
	}
}

// serveUI starts flow ui on a free loopback port and returns its base URL.
func serveUI(t *testing.T, tag, dir, state string) string {
	t.Helper()
	p := start(t, tag, dir, "ui", "--state", state, "--listen", "127.0.0.1:0")
	re := regexp.MustCompile(`on (http://127\.0\.0\.1:\d+)/`)
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if m := re.FindStringSubmatch(p.stdout.String()); m != nil {
			return m[1]
		}
		if p.exited() {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("flow ui did not say where it serves\n%s", p.describe())
	return ""
}

func artifacts(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("FLOW_E2E_ARTIFACTS")
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp("", "flow-e2e-ui-"); err != nil {
			t.Fatal(err)
		}
		// Kept only for a failure to be looked at; FLOW_E2E_ARTIFACTS keeps them always.
		t.Cleanup(func() {
			if !t.Failed() {
				os.RemoveAll(dir)
			}
		})
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshots in %s", dir)
	return dir
}

func screenshot(t *testing.T, ctx context.Context, dir, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Errorf("screenshot %s: %v", name, err)
		return
	}
	if err := os.WriteFile(filepath.Join(dir, name), png, 0o644); err != nil {
		t.Error(err)
	}
}

func do(t *testing.T, ctx context.Context, what string, a chromedp.Action[chromedp.Void]) {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if _, err := chromedp.Run(c, a); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func evalVoid(js string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := chromedp.Evaluate[any](js)(ctx, tg)
		return err
	})
}

// evalJSON evaluates js in the page; its value is passed through JSON into T.
func evalJSON[T any](t *testing.T, ctx context.Context, js string) T {
	t.Helper()
	var out T
	c, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	s, err := chromedp.Run(c, chromedp.Evaluate[string]("JSON.stringify("+js+")"))
	if err == nil {
		err = json.Unmarshal([]byte(s), &out)
	}
	if err != nil {
		t.Fatalf("evaluate %s: %v", js, err)
	}
	return out
}

// waitJS waits until js is true in the page.
func waitJS(t *testing.T, ctx context.Context, what, js string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		c, cancel := context.WithTimeout(ctx, 5*time.Second)
		ok, err := chromedp.Run(c, chromedp.Evaluate[bool]("(() => { try { return Boolean("+js+") } catch (e) { return false } })()"))
		cancel()
		if err == nil && ok {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	text := evalJSON[string](t, ctx, `document.querySelector("#runinfo").textContent`)
	t.Fatalf("the page never showed %s within 20s (%s); run info: %s", what, js, text)
}

// graphNodes is the page's graph: each instance's address and state.
func graphNodes(t *testing.T, ctx context.Context) map[string]string {
	t.Helper()
	return evalJSON[map[string]string](t, ctx, `Object.fromEntries([...document.querySelectorAll("#graphsvg .inst")].map(n => [n.dataset.address, n.dataset.status]))`)
}

// graphEdges is the page's edges, "FROM -> TO" between task groups and modules.
func graphEdges(t *testing.T, ctx context.Context) map[string]bool {
	t.Helper()
	list := evalJSON[[]string](t, ctx, `[...document.querySelectorAll("#graphsvg .edge")].map(e => e.dataset.from + " -> " + e.dataset.to)`)
	out := map[string]bool{}
	for _, e := range list {
		out[e] = true
	}
	return out
}

// checkTimeline compares each bar with the instance's recorded start and finish: the
// times it carries, and where it is drawn on the chart's scale.
func checkTimeline(t *testing.T, ctx context.Context, doc statusDoc, firstRun bool) {
	t.Helper()
	type bar struct {
		Address       string
		Start, Finish string
		X, W          float64
		T0, PerMs, X0 float64
		Critical      bool
	}
	bars := evalJSON[[]bar](t, ctx, `(() => { const s = document.querySelector(".gantt"); return [...s.querySelectorAll(".bar")].map(b => ({
		Address: b.dataset.address, Start: b.dataset.start, Finish: b.dataset.finish, X: +b.getAttribute("x"), W: +b.getAttribute("width"),
		T0: +s.dataset.t0, PerMs: +s.dataset.pxPerMs, X0: +s.dataset.x0, Critical: b.classList.contains("critical") })) })()`)
	recs := doc.byAddress()
	started := 0
	for _, task := range doc.Tasks {
		if task.StartedAt != nil {
			started++
		}
	}
	if len(bars) != started {
		t.Errorf("the timeline has %d bars, the run %d started instances", len(bars), started)
	}
	critical := map[string]bool{}
	for _, b := range bars {
		rec := recs[b.Address]
		if rec.StartedAt == nil || rec.FinishedAt == nil {
			t.Errorf("bar %s: the run recorded no start and finish for it", b.Address)
			continue
		}
		start, finish := rec.StartedAt.UnixMilli(), rec.FinishedAt.UnixMilli()
		if b.Start != fmt.Sprint(start) || b.Finish != fmt.Sprint(finish) {
			t.Errorf("bar %s runs %s..%s, recorded %d..%d", b.Address, b.Start, b.Finish, start, finish)
		}
		wantX, wantW := b.X0+float64(start-int64(b.T0))*b.PerMs, math.Max(1, float64(finish-start)*b.PerMs)
		if math.Abs(b.X-wantX) > 0.5 || math.Abs(b.W-wantW) > 0.5 {
			t.Errorf("bar %s drawn at x=%.1f width %.1f, its times put it at x=%.1f width %.1f", b.Address, b.X, b.W, wantX, wantW)
		}
		critical[b.Address] = b.Critical
	}
	if !firstRun { // the destroy: exec.prepare undone last, after a build
		on := 0
		for _, c := range critical {
			if c {
				on++
			}
		}
		if !critical["exec.prepare"] || on < 2 {
			t.Errorf("the destroy's critical path: %v, want exec.prepare and the build it waited for", critical)
		}
		return
	}
	// The run ended with exec.slow, which waited for the members' chains.
	if !critical["exec.slow"] || !critical["exec.prepare"] || critical["exec.broken"] {
		t.Errorf("critical path: %v, want exec.slow and exec.prepare on it, not exec.broken", critical)
	}
	if n := evalJSON[int](t, ctx, `document.querySelectorAll("#slowest li").length`); n != 5 {
		t.Errorf("the timeline names %d slowest instances, want 5", n)
	}
	if first := evalJSON[string](t, ctx, `document.querySelector("#slowest li").dataset.address`); first != "exec.slow" {
		t.Errorf("the slowest instance named first is %s, want exec.slow", first)
	}
}

// copyTree copies the files of src into dst.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}
