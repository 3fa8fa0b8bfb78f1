package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/flowdev/flow/internal/browser"
)

// gatedUIFlow writes a flow whose exec.slow runs until the file gate exists.
func gatedUIFlow(t *testing.T, dir string) (flowFile, gate string) {
	t.Helper()
	gate = filepath.Join(dir, "gate")
	flowFile = filepath.Join(dir, "main.hcl")
	src := fmt.Sprintf(`task "exec" "quick" {
  script = "echo quick"
}

task "exec" "slow" {
  depends_on = [exec.quick]
  script     = "echo waiting; while [ ! -e '%s' ]; do sleep 0.1; done; echo open"
}
`, gate)
	if err := os.WriteFile(flowFile, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return flowFile, gate
}

// TestUIManyTabs: twenty tabs on one flow ui all show the running instance, then its
// success, without a reload. A browser holds six HTTP/1.1 connections to a host: a
// page whose live stream holds one of them left the seventh tab blank.
func TestUIManyTabs(t *testing.T) {
	binary(t)
	dir := t.TempDir()
	tag := newTag(t)
	state := filepath.Join(dir, "state.db")
	flowFile, gate := gatedUIFlow(t, dir)
	run := start(t, tag, dir, "run", flowFile, "--state", state)
	waitStatus(t, tag, dir, state, 30*time.Second, "exec.slow running", func(d statusDoc) bool {
		return d.byAddress()["exec.slow"].Status == "running"
	})
	base := serveUI(t, tag, dir, state)
	ctx := browser.Start(t, 1000, 700)
	const tabs = 20
	pages := make([]context.Context, tabs)
	for i := range pages {
		tab, cancel := chromedp.NewContext(ctx)
		t.Cleanup(cancel)
		pages[i] = tab
		if err := chromedp.Do(tab); err != nil { // opens the tab, with no timeout: one would close it
			t.Fatalf("open tab %d: %v", i+1, err)
		}
		do(t, tab, fmt.Sprintf("open tab %d", i+1), chromedp.Navigate(base+"/"))
		waitJS(t, tab, fmt.Sprintf("tab %d: exec.slow running", i+1), `document.querySelector('#graphsvg .inst[data-address="exec.slow"]').dataset.status === "running"`)
	}
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for i, tab := range pages {
		waitJS(t, tab, fmt.Sprintf("tab %d: exec.slow succeeded", i+1), `document.querySelector('#graphsvg .inst[data-address="exec.slow"]').dataset.status === "succeeded" && document.querySelector("#runinfo").dataset.status === "succeeded"`)
	}
	if !run.wait(20 * time.Second) {
		t.Fatalf("the run did not end\n%s", run.describe())
	}
	// Reloads of one of them while the others stay open load at once (one in about 14
	// stalled for a minute before).
	for n := 1; n <= 10; n++ {
		began := time.Now()
		do(t, pages[0], "reload tab 1", evalVoid(`window.flowMark = "old"; location.reload()`))
		waitJS(t, pages[0], "tab 1 reloaded", `window.flowMark === undefined && document.querySelector('#graphsvg .inst[data-address="exec.slow"]').dataset.status === "succeeded"`)
		if took := time.Since(began); took > 10*time.Second {
			t.Errorf("reload %d with %d tabs open took %s", n, tabs, took)
		}
	}
}

// TestUIToken: flow ui on 0.0.0.0 prints a URL a browser can open with a token; a
// request without it is refused, one naming a foreign Host is refused even with it,
// and the page opened with it works (reached over loopback only).
func TestUIToken(t *testing.T) {
	binary(t)
	dir := t.TempDir()
	tag := newTag(t)
	state := filepath.Join(dir, "state.db")
	flowFile, gate := gatedUIFlow(t, dir)
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if r := runFlow(t, tag, dir, 60*time.Second, "run", flowFile, "--state", state); r.code != 0 {
		t.Fatalf("the run exited %d\n%s", r.code, r.desc)
	}
	p := start(t, tag, dir, "ui", "--state", state, "--listen", "0.0.0.0:0")
	re := regexp.MustCompile(`on http://(\S+):(\d+)/\?token=([0-9a-f]+) `)
	var m []string
	for deadline := time.Now().Add(10 * time.Second); m == nil && time.Now().Before(deadline) && !p.exited(); time.Sleep(50 * time.Millisecond) {
		m = re.FindStringSubmatch(p.stdout.String())
	}
	if m == nil {
		t.Fatalf("flow ui on 0.0.0.0 printed no URL with a token\n%s", p.describe())
	}
	if host := m[1]; host == "0.0.0.0" || strings.Contains(host, "[") {
		t.Errorf("flow ui printed %s, not an address a browser can open", m[0])
	}
	port, token := m[2], m[3]
	base := "http://127.0.0.1:" + port // loopback only: the test never reaches another address
	get := func(url, host string, cookie *http.Cookie) (int, string) {
		req, _ := http.NewRequest("GET", url, nil)
		if host != "" {
			req.Host = host
		}
		if cookie != nil {
			req.AddCookie(cookie)
		}
		resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	if code, body := get(base+"/api/log?run=1&address=exec.slow", "", nil); code != http.StatusUnauthorized || strings.Contains(body, "waiting") {
		t.Errorf("the log without the token: %d %q, want 401", code, body)
	}
	if code, _ := get(base+"/", "", nil); code != http.StatusUnauthorized {
		t.Errorf("the page without the token: %d, want 401", code)
	}
	cookie := &http.Cookie{Name: "flow_ui_token_" + port, Value: token}
	if code, body := get(base+"/api/log?run=1&address=exec.slow", "evil.example:"+port, cookie); code != http.StatusForbidden || strings.Contains(body, "waiting") {
		t.Errorf("the log with the token for Host evil.example: %d %q, want 403", code, body)
	}
	jar, _ := cookiejar.New(nil)
	resp, err := (&http.Client{Jar: jar}).Get(base + "/api/log?run=1&address=exec.slow&token=" + token)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), "waiting") {
		t.Errorf("the log with the token: %d %q, want 200 and the log", resp.StatusCode, body)
	}

	ctx := browser.Start(t, 1000, 700)
	do(t, ctx, "open the printed URL (over loopback)", chromedp.Navigate(base+"/?token="+token))
	waitJS(t, ctx, "the run drawn", `document.querySelector('#graphsvg .inst[data-address="exec.slow"]').dataset.status === "succeeded"`)
	if loc := evalJSON[string](t, ctx, `location.href`); strings.Contains(loc, token) {
		t.Errorf("the page's address keeps the token: %s", loc)
	}
	if c := evalJSON[string](t, ctx, `document.cookie`); c != "" {
		t.Errorf("the page's script can read the cookie: %q", c)
	}
	do(t, ctx, "open the timeline", chromedp.Click(chromedp.CSS(`nav button[data-view="timeline"]`)))
	waitJS(t, ctx, "the timeline", `document.querySelectorAll(".gantt .bar").length === 2`)
}

// TestUIInterruptedRun: a run killed while an instance runs keeps the duration of its
// last recorded event: the header and the bars do not grow with the clock.
func TestUIInterruptedRun(t *testing.T) {
	binary(t)
	dir := t.TempDir()
	tag := newTag(t)
	state := filepath.Join(dir, "state.db")
	flowFile, _ := gatedUIFlow(t, dir)
	run := start(t, tag, dir, "run", flowFile, "--state", state)
	waitStatus(t, tag, dir, state, 30*time.Second, "exec.slow running", func(d statusDoc) bool {
		return d.byAddress()["exec.slow"].Status == "running"
	})
	time.Sleep(500 * time.Millisecond)
	run.killGroup()
	run.wait(10 * time.Second)
	base := serveUI(t, tag, dir, state)
	ctx := browser.Start(t, 1000, 700)
	shown := func() (string, float64) {
		do(t, ctx, "open the timeline", chromedp.Navigate(base+"/?view=timeline"))
		waitJS(t, ctx, "the interrupted run", `document.querySelector("#runinfo").dataset.status === "interrupted" && document.querySelectorAll(".gantt .bar").length === 2`)
		return evalJSON[string](t, ctx, `document.querySelector("#runinfo").textContent`),
			evalJSON[float64](t, ctx, `+document.querySelector('.gantt .bar[data-address="exec.slow"]').getAttribute("width") / +document.querySelector(".gantt").dataset.pxPerMs`)
	}
	info, slow := shown()
	time.Sleep(2500 * time.Millisecond)
	info2, slow2 := shown()
	if info != info2 {
		t.Errorf("the interrupted run's header changed across a reload 2.5s later: %q, then %q", info, info2)
	}
	if slow2-slow > 100 {
		t.Errorf("exec.slow's interrupted bar grew from %.0fms to %.0fms across a reload", slow, slow2)
	}
	time.Sleep(2500 * time.Millisecond) // the page redraws every 2s while a run is live
	if info3 := evalJSON[string](t, ctx, `document.querySelector("#runinfo").textContent`); info3 != info2 {
		t.Errorf("the interrupted run's header changed while the page stayed open: %q, then %q", info2, info3)
	}
}

// TestUIFailedAttempt: a task whose first attempt failed shows both attempts on the
// timeline, the first marked failed with its error in the details, and its time
// counts from the first.
func TestUIFailedAttempt(t *testing.T) {
	binary(t)
	dir := t.TempDir()
	tag := newTag(t)
	state := filepath.Join(dir, "state.db")
	flowFile := filepath.Join(dir, "main.hcl")
	marker := filepath.Join(dir, "tried")
	src := fmt.Sprintf(`task "exec" "flaky" {
  script = "sleep 1; if [ ! -e '%s' ]; then touch '%s'; echo 'first try fails' >&2; exit 4; fi; sleep 1; echo ok"
  retry {
    attempts = 2
    delay    = "1s"
  }
}

task "exec" "after" {
  depends_on = [exec.flaky]
  script     = "echo after"
}
`, marker, marker)
	if err := os.WriteFile(flowFile, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := runFlow(t, tag, dir, 60*time.Second, "run", flowFile, "--state", state); r.code != 0 {
		t.Fatalf("the run exited %d\n%s", r.code, r.desc)
	}
	base := serveUI(t, tag, dir, state)
	ctx := browser.Start(t, 1200, 700)
	do(t, ctx, "open the timeline", chromedp.Navigate(base+"/?view=timeline"))
	waitJS(t, ctx, "the timeline", `document.querySelectorAll(".gantt .bar").length === 2`)
	type rect struct {
		Status, Start, Finish string
	}
	rects := evalJSON[[]rect](t, ctx, `[...document.querySelectorAll('.gantt rect[data-address="exec.flaky"]')].map(r => ({Status: r.dataset.status, Start: r.dataset.start, Finish: r.dataset.finish}))`)
	if len(rects) != 2 || rects[0].Status != "failed" || rects[1].Status != "succeeded" || rects[0].Finish > rects[1].Start {
		t.Fatalf("exec.flaky's bars: %+v, want its failed first attempt, then the one that succeeded", rects)
	}
	// From the first attempt's start: about 1s + 1s delay + 2s, not the 2s of the last.
	if took := evalJSON[float64](t, ctx, `+document.querySelector('#slowest li[data-address="exec.flaky"]').dataset.ms`); took < 3500 {
		t.Errorf("the slowest list gives exec.flaky %.0fms, want its time from its first attempt (over 3.5s)", took)
	}
	do(t, ctx, "click the failed attempt", chromedp.Click(chromedp.CSS(`.gantt rect.try[data-address="exec.flaky"]`)))
	waitJS(t, ctx, "the details", `document.querySelector('#d-fields [data-field="attempt 1"]') !== null`)
	if got := evalJSON[string](t, ctx, `document.querySelector('#d-fields [data-field="attempt 1"]').textContent`); !strings.Contains(got, "code 4") {
		t.Errorf("the first attempt's details: %q, want its error", got)
	}
}

// TestUIEscapes: what the page writes into its HTML is escaped, every character that
// could open a tag or an attribute.
func TestUIEscapes(t *testing.T) {
	binary(t)
	dir := t.TempDir()
	tag := newTag(t)
	state := filepath.Join(dir, "state.db")
	base := serveUI(t, tag, dir, state)
	ctx := browser.Start(t, 800, 600)
	do(t, ctx, "open the page", chromedp.Navigate(base+"/"))
	waitJS(t, ctx, "the script loaded", `typeof esc === "function"`)
	if got := evalJSON[string](t, ctx, `esc("<img src=x onerror='a'>&\"")`); got != "&lt;img src=x onerror=&#39;a&#39;&gt;&amp;&quot;" {
		t.Errorf("esc escapes to %q", got)
	}
	// And as the page uses it: an address with markup in its key is shown as text.
	evil := `exec.x["<b id=injected>k</b>'\""]`
	if n := evalJSON[int](t, ctx, fmt.Sprintf(`(() => { setDetail({run: {id: 1, kind: "run", status: "succeeded", started_at: new Date().toISOString()}, live: false,
		instances: [{address: %q, type: "exec", status: "succeeded", order: 0}]}); return document.querySelectorAll("#injected").length })()`, evil)); n != 0 {
		t.Errorf("an address's markup became part of the page (%d elements)", n)
	}
	if got := evalJSON[string](t, ctx, `document.querySelector("#graphsvg .inst").dataset.address`); got != evil {
		t.Errorf("the address reads back as %q, want %q", got, evil)
	}
}
