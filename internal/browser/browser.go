// Package browser starts Debian's chromium headless for the tests that drive flow ui
// in a real browser (chromedp). It is imported only by tests. It owns the browser's
// flags and its lifetime; it does not own what a test does with the page.
package browser

import (
	"context"
	"os"
	"os/exec"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/flowdev/flow/internal/ci"
)

// Path is chromium's executable, or "" when it is missing: the test is skipped
// then, and fails under CI (scripts/prereqs.sh installs it).
func Path(tb testing.TB) string {
	tb.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if ci.Enabled() {
		tb.Fatal("chromium is missing (Debian package chromium; scripts/prereqs.sh installs it)")
	}
	tb.Skip("chromium is missing (Debian package chromium; scripts/prereqs.sh installs it)")
	return ""
}

// Start starts chromium headless with a fresh profile and returns a context for
// chromedp's actions on its first tab; the browser is stopped when the test ends.
// The machine has no internet: every background request chromium would make on its
// own is turned off.
func Start(tb testing.TB, width, height int) context.Context {
	tb.Helper()
	path := Path(tb)
	profile, err := os.MkdirTemp("", "flow-chromium-")
	if err != nil {
		tb.Fatal(err)
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("no-default-browser-check", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(profile),
		chromedp.WindowSize(width, height),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	if err := chromedp.Do(ctx); err != nil { // starts the browser
		cancel()
		cancelAlloc()
		os.RemoveAll(profile)
		tb.Fatalf("start chromium (%s): %v", path, err)
	}
	tb.Cleanup(func() {
		cancel()
		cancelAlloc()
		os.RemoveAll(profile)
	})
	return ctx
}
