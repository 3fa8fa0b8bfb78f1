package ui

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/flowdev/flow/internal/browser"
)

// bigRun is a finished run of 10,000 instances: 10 tasks of 500 instances at the top
// and 4 module instances of 5 tasks of 250, each instance waiting for the one of the
// same key in the task before it.
func bigRun() *Detail {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	d := &Detail{Run: Run{ID: 1, Kind: "run", Status: "succeeded", StartedAt: start}}
	add := func(prefix string, tasks, each int) {
		for t := 0; t < tasks; t++ {
			for k := 0; k < each; k++ {
				addr := fmt.Sprintf("%sexec.t%d[\"k%d\"]", prefix, t, k)
				in := Instance{Address: addr, Type: "exec", Status: "succeeded", Attempts: 1, DepsKnown: true, Order: len(d.Instances)}
				s := start.Add(time.Duration(t*1000+k) * time.Millisecond)
				f := s.Add(time.Duration(200+k%300) * time.Millisecond)
				in.StartedAt, in.FinishedAt = &s, &f
				if t > 0 {
					in.Deps = []string{fmt.Sprintf("%sexec.t%d[\"k%d\"]", prefix, t-1, k)}
				}
				d.Instances = append(d.Instances, in)
			}
		}
	}
	add("", 10, 500)
	for m := 1; m <= 4; m++ {
		add(fmt.Sprintf("module.member[\"m%d\"].", m), 5, 250)
	}
	fin := start.Add(time.Hour)
	d.Run.FinishedAt = &fin
	return d
}

type fixed struct{ d *Detail }

func (f fixed) Runs() ([]Run, error)               { return []Run{f.d.Run}, nil }
func (f fixed) Detail(uint64) (*Detail, error)     { return f.d, nil }
func (f fixed) Log(uint64, string) ([]byte, error) { return []byte("output\n"), nil }

// BenchmarkUI10k opens the page of a 10,000-instance run in headless chromium and
// reports when the graph (grouped by task and module) and then the timeline were
// painted: graph-ms is from the start of navigation, timeline-ms from the click on
// the Timeline tab (docs/performance.md). It needs chromium, as the e2e test does.
func BenchmarkUI10k(b *testing.B) {
	d := bigRun()
	srv := httptest.NewServer(New(fixed{d}).Handler(true))
	b.Cleanup(srv.Close) // after the browser's cleanup, which ends the page's events stream
	ctx := browser.Start(b, 1400, 900)
	var graphMs, timelineMs float64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := chromedp.Run(ctx, chromedp.Navigate(srv.URL+"/?view=graph")); err != nil {
			b.Fatal(err)
		}
		g := waitNumber(b, ctx, `document.body.dataset.graphDrawnAt`)
		n := waitNumber(b, ctx, `document.querySelectorAll("#graphsvg .inst").length`)
		if n != 10000 {
			b.Fatalf("the graph has %v instances, want 10000", n)
		}
		t := waitNumber(b, ctx, `(document.querySelector('nav button[data-view="timeline"]').click(), performance.now())`)
		tl := waitNumber(b, ctx, `document.body.dataset.timelineDrawnAt`)
		if bars := waitNumber(b, ctx, `document.querySelectorAll(".gantt .bar").length`); bars != 10000 {
			b.Fatalf("the timeline has %v bars, want 10000", bars)
		}
		graphMs += g
		timelineMs += tl - t
	}
	b.ReportMetric(graphMs/float64(b.N), "graph-ms")
	b.ReportMetric(timelineMs/float64(b.N), "timeline-ms")
}

// waitNumber evaluates js until it is a number, for up to 30 s.
func waitNumber(b *testing.B, ctx context.Context, js string) float64 {
	b.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		s, err := chromedp.Run(ctx, chromedp.Evaluate[string]("String("+js+")"))
		if err == nil {
			if v, err := strconv.ParseFloat(s, 64); err == nil {
				return v
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	b.Fatalf("%s never became a number", js)
	return 0
}
